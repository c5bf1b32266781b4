// What the two halves of a socket-transport edge send each other.
#pragma once

#include <cstdint>
#include <string>

#include "src/util/socket.h"

namespace weft::socket_wire {

constexpr uint32_t kHelloMagic = 0x57465348;  // "WFSH"
constexpr uint32_t kVersion = 5;
constexpr uint32_t kMaxSockets = 16;

// Receiver -> sender over the bootstrap: where to connect, and the nonce that
// ties the sockets to this one edge (a late socket of an earlier edge with
// the same secret is told apart).
// With `reverse` set, socket 0 is not connected anew: the sender writes
// into the socket 0 that the receiver's own sending end to it connected
// (its receiving end from the receiver accepted it), so that TCP connection
// carries both directions and the acknowledgement of a small message rides
// on the next one the other way instead of travelling as a segment of its
// own. Sockets 1 and up (parts of large slots only) are connected to
// `addr` as usual: sharing them too would have both directions' large
// copies queue for one socket lock.
struct ConnectInfo {
  SocketAddress addr;
  uint32_t nSockets;
  uint32_t reverse;
  uint32_t reserved;  // zero; keeps the layout free of padding
  uint64_t nonce;
};

// Sender -> receiver on every data socket, after the handshake of
// src/bootstrap/handshake.h (which proves the secret both ways), followed by
// its MAC.
struct SocketHello {
  uint32_t magic;
  uint32_t version;
  int32_t senderRank;
  uint32_t index;  // which of the nSockets this is
  uint64_t tag;
  uint64_t nonce;
};

// What is wrong with a ConnectInfo from the receiver; empty when usable.
inline std::string connectInfoProblem(const ConnectInfo& info) {
  if (info.nSockets < 1 || info.nSockets > kMaxSockets)
    return std::to_string(info.nSockets) + " sockets (1 to " + std::to_string(kMaxSockets) + ")";
  if (info.reverse > 1) return "bad reverse flag " + std::to_string(info.reverse);
  if (info.addr.empty() && !(info.reverse && info.nSockets == 1)) return "no address";
  return std::string();
}

// What is wrong with a socket's hello at the receiver of edge (peer, tag,
// nonce) with nSockets sockets; empty when it belongs there. (Whether its
// index is already taken is the connection's to check.)
inline std::string socketHelloProblem(const SocketHello& h, int peer, uint64_t tag, uint64_t nonce,
                                      uint32_t nSockets) {
  if (h.magic != kHelloMagic || h.version != kVersion) return "bad magic (not a weft socket hello)";
  if (h.senderRank != peer || h.tag != tag || h.nonce != nonce)
    return "hello for another edge (rank " + std::to_string(h.senderRank) + ", tag " + std::to_string(h.tag) + ")";
  if (h.index >= nSockets) return "bad socket index " + std::to_string(h.index);
  return std::string();
}

// Before every part of a slot on a socket: the slot's total size (or
// kCloseMarker when the sender leaves in an orderly way) and its sequence
// number, so each socket's receiver knows where the part goes without asking
// the others. A part of zero bytes is sent only for an empty slot, on socket 0.
struct SlotHeader {
  uint64_t bytes;
  uint32_t seq;
  uint32_t reserved;
};
constexpr uint64_t kCloseMarker = ~0ull;

// Slots are cut into at most one part per socket, none smaller than this
// (smaller parts cost more in per-socket overhead than they gain).
constexpr uint64_t kMinPartBytes = 64 * 1024;

// Every slot has a part on socket 0, so its receiver knows which slot comes
// next there and reads a header together with the first kHeadPayload bytes
// of its part in one recv: a small slot costs one system call, not two.
// For that read never to take bytes of the next part, parts on socket 0
// shorter than kHeadPayload travel padded to it (the padding lands in the
// slot past the part and is never posted). Off where slots are smaller.
constexpr uint64_t kHeadPayload = 240;
inline uint64_t wireBytes(uint32_t index, uint64_t length, uint64_t slotBytes) {
  return index == 0 && slotBytes >= kHeadPayload && length < kHeadPayload ? kHeadPayload : length;
}

// Byte range [*offset, *offset + *length) of part `index` of a slot.
inline void slotPart(uint64_t bytes, uint32_t nSockets, uint32_t index, uint64_t* offset, uint64_t* length) {
  uint64_t parts = (bytes + kMinPartBytes - 1) / kMinPartBytes;
  if (parts > nSockets) parts = nSockets;
  if (parts == 0) parts = 1;
  uint64_t per = (bytes + parts - 1) / parts;
  per = (per + 63) / 64 * 64;  // keep parts cache-line aligned inside the slot
  uint64_t start = index * per;
  if (start > bytes) start = bytes;
  uint64_t end = start + per > bytes ? bytes : start + per;
  *offset = start;
  *length = end - start;
}

}  // namespace weft::socket_wire
