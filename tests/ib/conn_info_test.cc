#include <gtest/gtest.h>

#include <cstring>

#include "src/util/error.h"
#include "transports/ib/conn_info.h"

using namespace weft::ib;

namespace {

ConnInfo sample() {
  ConnInfo c;
  c.role = ConnRole::Receiver;
  c.usable = 1;
  c.linkLayer = 2;
  c.mtu = 5;
  c.srcRank = 3;
  c.dstRank = 1000;
  c.nQps = 4;
  for (uint32_t i = 0; i < kIbMaxQps; ++i) c.qpn[i] = i < 4 ? 0x10000u + i * 17 : 0;
  c.psn = 0xabcdef;
  c.lid = 0x1234;
  for (int i = 0; i < 16; ++i) c.gid[i] = static_cast<uint8_t>(0xf0 + i);
  c.fifoAddr = 0x7f00'1234'5678'9000ull;
  c.fifoRkey = 0xdeadbeef;
  c.nSlots = 8;
  c.slotBytes = 512 * 1024;
  c.creditAddr = 0x7fff'0000'1000ull;
  c.creditRkey = 0x0badf00d;
  c.pkey = 0x8001;
  return c;
}

weftResult_t decodeError(const std::vector<uint8_t>& w, std::string* msg = nullptr) {
  try {
    decodeConnInfo(w.data(), w.size());
  } catch (const weft::Error& e) {
    if (msg) *msg = e.what();
    return e.code();
  }
  return weftSuccess;
}

}  // namespace

TEST(IbConnInfo, Crc32KnownValue) {
  const char* s = "123456789";  // the standard CRC-32 check value
  EXPECT_EQ(crc32(reinterpret_cast<const uint8_t*>(s), 9), 0xcbf43926u);
}

TEST(IbConnInfo, RoundTrip) {
  ConnInfo c = sample();
  auto w = encodeConnInfo(c);
  EXPECT_EQ(w.size(), connInfoWireBytes());
  EXPECT_EQ(decodeConnInfo(w.data(), w.size()), c);

  ConnInfo s = sample();
  s.role = ConnRole::Sender;
  s.nQps = kIbMaxQps;
  for (uint32_t i = 0; i < kIbMaxQps; ++i) s.qpn[i] = 0xffffff - i;
  auto ws = encodeConnInfo(s);
  EXPECT_EQ(decodeConnInfo(ws.data(), ws.size()), s);
}

TEST(IbConnInfo, LittleEndianMagicFirst) {
  auto w = encodeConnInfo(sample());
  uint32_t m = w[0] | w[1] << 8 | w[2] << 16 | uint32_t(w[3]) << 24;
  EXPECT_EQ(m, kConnInfoMagic);
}

TEST(IbConnInfo, TruncatedAndOversizedRejected) {
  auto w = encodeConnInfo(sample());
  for (size_t n : {size_t(0), size_t(1), size_t(4), w.size() / 2, w.size() - 1}) {
    std::vector<uint8_t> t(w.begin(), w.begin() + static_cast<long>(n));
    std::string msg;
    EXPECT_EQ(decodeError(t, &msg), weftRemoteError) << n;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
  auto longer = w;
  longer.push_back(0);
  EXPECT_EQ(decodeError(longer), weftRemoteError);
}

TEST(IbConnInfo, EveryFlippedBitIsRejected) {
  auto w = encodeConnInfo(sample());
  for (size_t byte = 0; byte < w.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto c = w;
      c[byte] ^= static_cast<uint8_t>(1u << bit);
      ASSERT_EQ(decodeError(c), weftRemoteError) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(IbConnInfo, BadMagicAndVersionNamed) {
  auto w = encodeConnInfo(sample());
  std::string msg;
  auto m = w;
  m[0] ^= 0xff;
  EXPECT_EQ(decodeError(m, &msg), weftRemoteError);
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  auto v = w;
  v[4] = 9;
  EXPECT_EQ(decodeError(v, &msg), weftRemoteError);
  EXPECT_NE(msg.find("version"), std::string::npos) << msg;
}

TEST(IbConnInfo, ValidChecksumButInsaneFieldsRejected) {
  ConnInfo c = sample();
  c.nQps = kIbMaxQps + 1;
  EXPECT_EQ(decodeError(encodeConnInfo(c)), weftRemoteError);
  c = sample();
  c.nQps = 0;
  EXPECT_EQ(decodeError(encodeConnInfo(c)), weftRemoteError);
  c = sample();
  c.psn = 0x1000000;
  EXPECT_EQ(decodeError(encodeConnInfo(c)), weftRemoteError);
  c = sample();
  c.mtu = 6;
  EXPECT_EQ(decodeError(encodeConnInfo(c)), weftRemoteError);
  // An end without IB says so; its other fields are not checked.
  c = ConnInfo{};
  c.usable = 0;
  auto w = encodeConnInfo(c);
  EXPECT_EQ(decodeConnInfo(w.data(), w.size()).usable, 0);
}

// Partition keys: the partitions (low 15 bits) must agree and one end must
// be a full member (bit 15); an unknown key (0) is not judged.
TEST(IbConnInfo, PartitionKeysMustShareAPartitionWithOneFullMember) {
  EXPECT_EQ(partitionProblem(0xffff, 0xffff), "");
  EXPECT_EQ(partitionProblem(0x8001, 0x0001), "");  // full and limited
  EXPECT_EQ(partitionProblem(0, 0x8002), "");       // this end could not say
  EXPECT_EQ(partitionProblem(0x8001, 0), "");
  EXPECT_EQ(partitionProblem(0x8001, 0x8002), "partition keys differ (0x8001 here, 0x8002 on the peer)");
  EXPECT_EQ(partitionProblem(0xffff, 0x8001), "partition keys differ (0xffff here, 0x8001 on the peer)");
  EXPECT_EQ(partitionProblem(0x0003, 0x0003),
            "both ends are limited members of partition 0x0003 (one must be a full member)");
}

// A peer that holds the secret can put any values in its connection info:
// one claiming another rank, made for another rank, of the wrong role, or
// naming QP numbers no peer owns, is refused, each naming what is wrong.
TEST(IbConnInfo, PeerClaimingAnotherRankOrQpIsRefused) {
  ConnInfo ok = sample();  // rank 3 -> 1000, receiver side
  EXPECT_EQ(connInfoPeerProblem(ok, ConnRole::Receiver, 3, 1000), "");

  // Rank 5 answering in rank 3's place, or meant for another rank.
  EXPECT_EQ(connInfoPeerProblem(ok, ConnRole::Receiver, 5, 1000),
            "connection info is for rank 3 -> 1000 (receive side), expected 5 -> 1000 (receive side)");
  EXPECT_NE(connInfoPeerProblem(ok, ConnRole::Receiver, 3, 7).find("expected 3 -> 7"), std::string::npos);
  EXPECT_NE(connInfoPeerProblem(ok, ConnRole::Sender, 3, 1000).find("(send side)"), std::string::npos);

  ConnInfo special = ok;
  special.qpn[2] = 1;  // the GSI QP
  EXPECT_EQ(connInfoPeerProblem(special, ConnRole::Receiver, 3, 1000),
            "QP number 1 of QP 2 is not one a peer can own");
  ConnInfo wide = ok;
  wide.qpn[0] = 0x1000000;
  EXPECT_NE(connInfoPeerProblem(wide, ConnRole::Receiver, 3, 1000).find("16777216"), std::string::npos);
  ConnInfo twice = ok;
  twice.qpn[3] = twice.qpn[1];
  EXPECT_EQ(connInfoPeerProblem(twice, ConnRole::Receiver, 3, 1000),
            "QPs 1 and 3 both name QP number " + std::to_string(ok.qpn[1]));
  // QP slots past nQps are not looked at.
  ConnInfo unused = ok;
  unused.qpn[kIbMaxQps - 1] = 0;
  EXPECT_EQ(connInfoPeerProblem(unused, ConnRole::Receiver, 3, 1000), "");
}
