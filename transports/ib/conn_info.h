// The connection info two ends of an IB connection exchange over the
// bootstrap: enough to bring RC queue pairs to RTR/RTS and to RDMA-write
// into the peer's registered slots and credit word.
//
// The wire form is fixed-size little-endian with a magic, a version, the
// ranks and role it was made for, and a CRC-32 over everything before it, so
// a truncated, corrupt, stale or misrouted message is rejected with a clear
// error instead of turning into a QP pointed at a random address. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::ib {

constexpr uint32_t kIbMaxQps = 16;
constexpr uint32_t kConnInfoMagic = 0x57464942;  // "WFIB"
constexpr uint16_t kConnInfoVersion = 3;

enum class ConnRole : uint8_t { Sender = 1, Receiver = 2 };

struct ConnInfo {
  ConnRole role = ConnRole::Sender;
  uint8_t usable = 1;       // 0: this end has no usable IB port (then only ranks/role matter)
  uint8_t linkLayer = 0;    // IBV_LINK_LAYER_* of the port
  uint8_t mtu = 0;          // enum ibv_mtu of the port (1..5)
  int32_t srcRank = -1;     // rank that made the message
  int32_t dstRank = -1;     // rank it is meant for
  uint32_t nQps = 0;
  std::array<uint32_t, kIbMaxQps> qpn{};
  uint32_t psn = 0;         // 24 bits, the first packet sequence number of every QP
  uint16_t lid = 0;
  std::array<uint8_t, 16> gid{};
  uint8_t gidType = 0;       // 1 + GidType of that GID (0: unknown)
  uint64_t subnetPrefix = 0; // the upper 64 bits of the GID: IB's subnet; a differing one needs a GRH
  uint16_t pkey = 0;         // the partition key at WEFT_IB_PKEY's index (0: not known)
  // Receiver: slot 0 of its FIFO and the rkey to write there.
  uint64_t fifoAddr = 0;
  uint32_t fifoRkey = 0;
  uint32_t nSlots = 0;
  uint64_t slotBytes = 0;
  // Sender: the word the receiver writes its consumed counter into.
  uint64_t creditAddr = 0;
  uint32_t creditRkey = 0;

  bool operator==(const ConnInfo&) const = default;
};

// Bytes of the wire form (constant: the bootstrap wants exact sizes).
size_t connInfoWireBytes();

std::vector<uint8_t> encodeConnInfo(const ConnInfo& info);

// Throws weftRemoteError naming what is wrong: wrong size, bad magic,
// unsupported version, checksum mismatch, nQps/psn/mtu out of range.
ConnInfo decodeConnInfo(const uint8_t* data, size_t bytes);

uint32_t crc32(const uint8_t* data, size_t bytes);

// Why `remote` is not the connection info this end expects, or "" when it
// is: made by `peer` for `self`, with the opposite role, and QP numbers a
// peer could own (24 bits, not the special QPs 0 and 1, no two alike). A
// peer that holds the job's secret can still send any values; these are
// the ones that would connect this end to the wrong rank or QP.
std::string connInfoPeerProblem(const ConnInfo& remote, ConnRole wantRole, int peer, int self);

// Why two ends with these partition keys cannot talk, or "" when they can
// (or when either key is unknown, 0). Bit 15 of a key is membership (full
// or limited), the other 15 bits the partition: the partitions must agree
// and at least one end must be a full member. A mismatch otherwise shows
// only as retries that run out, tens of seconds into the first call.
std::string partitionProblem(uint16_t mine, uint16_t peer);

}  // namespace weft::ib
