#include "transports/ib/conn_info.h"

#include <cstdio>

#include "src/util/error.h"

namespace weft::ib {

namespace {

// Field by field, little-endian, so the format does not depend on struct
// layout or on the host byte order of either end.
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(const uint8_t* p) : p_(p) {}
  uint8_t u8() { return *p_++; }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }

 private:
  uint64_t get(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(*p_++) << (8 * i);
    return v;
  }
  const uint8_t* p_;
};

void writeBody(Writer& w, const ConnInfo& c) {
  w.u32(kConnInfoMagic);
  w.u16(kConnInfoVersion);
  w.u8(static_cast<uint8_t>(c.role));
  w.u8(c.usable);
  w.u8(c.linkLayer);
  w.u8(c.mtu);
  w.u16(c.lid);
  w.u32(static_cast<uint32_t>(c.srcRank));
  w.u32(static_cast<uint32_t>(c.dstRank));
  w.u32(c.nQps);
  for (uint32_t q : c.qpn) w.u32(q);
  w.u32(c.psn);
  for (uint8_t b : c.gid) w.u8(b);
  w.u8(c.gidType);
  w.u64(c.subnetPrefix);
  w.u16(c.pkey);
  w.u64(c.fifoAddr);
  w.u32(c.fifoRkey);
  w.u32(c.nSlots);
  w.u64(c.slotBytes);
  w.u64(c.creditAddr);
  w.u32(c.creditRkey);
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t bytes) {
  // Reflected CRC-32 (polynomial 0xEDB88320), bit by bit: a few hundred
  // bytes once per connection, so no table is worth its memory.
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < bytes; ++i) {
    crc ^= data[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string partitionProblem(uint16_t mine, uint16_t peer) {
  if (mine == 0 || peer == 0) return "";
  char buf[160];
  if ((mine & 0x7fff) != (peer & 0x7fff)) {
    std::snprintf(buf, sizeof buf, "partition keys differ (0x%04x here, 0x%04x on the peer)", mine, peer);
    return buf;
  }
  if (((mine | peer) & 0x8000) == 0) {
    std::snprintf(buf, sizeof buf, "both ends are limited members of partition 0x%04x (one must be a full member)",
                  mine & 0x7fff);
    return buf;
  }
  return "";
}

std::string connInfoPeerProblem(const ConnInfo& remote, ConnRole wantRole, int peer, int self) {
  char buf[200];
  if (remote.role != wantRole || remote.srcRank != peer || remote.dstRank != self) {
    std::snprintf(buf, sizeof buf, "connection info is for rank %d -> %d (%s side), expected %d -> %d (%s side)",
                  remote.srcRank, remote.dstRank, remote.role == ConnRole::Sender ? "send" : "receive", peer, self,
                  wantRole == ConnRole::Sender ? "send" : "receive");
    return buf;
  }
  if (!remote.usable) return "";  // no QPs to check: the caller refuses it anyway
  for (uint32_t q = 0; q < remote.nQps && q < kIbMaxQps; ++q) {
    const uint32_t n = remote.qpn[q];
    if (n < 2 || n > 0xffffff) {
      std::snprintf(buf, sizeof buf, "QP number %u of QP %u is not one a peer can own", n, q);
      return buf;
    }
    for (uint32_t o = 0; o < q; ++o)
      if (remote.qpn[o] == n) {
        std::snprintf(buf, sizeof buf, "QPs %u and %u both name QP number %u", o, q, n);
        return buf;
      }
  }
  return "";
}

size_t connInfoWireBytes() {
  static const size_t n = encodeConnInfo(ConnInfo{}).size();
  return n;
}

std::vector<uint8_t> encodeConnInfo(const ConnInfo& info) {
  Writer w;
  writeBody(w, info);
  uint32_t sum = crc32(w.bytes().data(), w.bytes().size());
  w.u32(sum);
  return std::move(w.bytes());
}

ConnInfo decodeConnInfo(const uint8_t* data, size_t bytes) {
  const size_t want = connInfoWireBytes();
  if (bytes != want)
    raise(weftRemoteError, "IB connection info has %zu bytes, expected %zu (truncated or from another weft version)",
          bytes, want);
  Reader r(data);
  uint32_t magic = r.u32();
  if (magic != kConnInfoMagic)
    raise(weftRemoteError, "IB connection info has bad magic 0x%08x (expected 0x%08x)", magic, kConnInfoMagic);
  uint16_t version = r.u16();
  if (version != kConnInfoVersion)
    raise(weftRemoteError, "IB connection info version %u, this weft speaks %u", version, kConnInfoVersion);
  uint32_t stored = static_cast<uint32_t>(data[want - 4]) | uint32_t(data[want - 3]) << 8 |
                    uint32_t(data[want - 2]) << 16 | uint32_t(data[want - 1]) << 24;
  uint32_t computed = crc32(data, want - 4);
  if (stored != computed)
    raise(weftRemoteError, "IB connection info checksum mismatch (stored 0x%08x, computed 0x%08x): corrupt message",
          stored, computed);

  ConnInfo c;
  uint8_t role = r.u8();
  if (role != static_cast<uint8_t>(ConnRole::Sender) && role != static_cast<uint8_t>(ConnRole::Receiver))
    raise(weftRemoteError, "IB connection info has unknown role %u", role);
  c.role = static_cast<ConnRole>(role);
  c.usable = r.u8();
  c.linkLayer = r.u8();
  c.mtu = r.u8();
  c.lid = r.u16();
  c.srcRank = static_cast<int32_t>(r.u32());
  c.dstRank = static_cast<int32_t>(r.u32());
  c.nQps = r.u32();
  for (auto& q : c.qpn) q = r.u32();
  c.psn = r.u32();
  for (auto& b : c.gid) b = r.u8();
  c.gidType = r.u8();
  c.subnetPrefix = r.u64();
  c.pkey = r.u16();
  c.fifoAddr = r.u64();
  c.fifoRkey = r.u32();
  c.nSlots = r.u32();
  c.slotBytes = r.u64();
  c.creditAddr = r.u64();
  c.creditRkey = r.u32();

  // A checksum proves the bytes arrived as sent, not that the sender was
  // sane: range-check what would otherwise index arrays or program QPs.
  if (c.usable) {
    if (c.nQps < 1 || c.nQps > kIbMaxQps)
      raise(weftRemoteError, "IB connection info has %u QPs (1..%u allowed)", c.nQps, kIbMaxQps);
    if (c.psn > 0xffffffu) raise(weftRemoteError, "IB connection info has PSN 0x%x wider than 24 bits", c.psn);
    if (c.mtu < 1 || c.mtu > 5) raise(weftRemoteError, "IB connection info has MTU code %u (1..5)", c.mtu);
    if (c.gidType > 3) raise(weftRemoteError, "IB connection info has GID type code %u (0..3)", c.gidType);
  }
  return c;
}

}  // namespace weft::ib
