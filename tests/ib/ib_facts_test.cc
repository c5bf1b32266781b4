// The IB transport's checks of what comes from outside the process
// (transports/ib/ib_facts.h): the peer's connection info against this
// end's, the facts rows, and the verbs codes and texts discovery reads.
#include <gtest/gtest.h>

#include "transports/ib/ib_facts.h"

using namespace weft::ib;

namespace {

const Gid kV4a{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
const Gid kV4b{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
const Gid kV6{0xfd, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};

ConnInfo end(ConnRole role, int src, int dst, uint32_t qpn, const Gid& gid) {
  ConnInfo c;
  c.role = role;
  c.linkLayer = 2;  // Ethernet
  c.mtu = 5;
  c.srcRank = src;
  c.dstRank = dst;
  c.nQps = 1;
  c.qpn[0] = qpn;
  c.gid = gid;
  c.gidType = 2;  // 1 + RoceV2
  c.subnetPrefix = subnetPrefixOf(gid);
  c.pkey = 0xffff;
  c.nSlots = 8;
  c.slotBytes = 1 << 19;
  return c;
}

// This end (rank 0, sender) checks what rank 1 sent.
ConnInfoRefusal check(const ConnInfo& remote, LinkLayer link = LinkLayer::Ethernet) {
  return connInfoMismatch(end(ConnRole::Sender, 0, 1, 0x100, kV4a), remote, ConnRole::Receiver, 1, 0, link, 0);
}

}  // namespace

TEST(IbFacts, MatchingConnInfoIsAccepted) {
  const ConnInfoRefusal r = check(end(ConnRole::Receiver, 1, 0, 0x200, kV4b));
  EXPECT_EQ(r.code, weftSuccess) << r.why;
  EXPECT_EQ(r.why, "");
}

TEST(IbFacts, EachMismatchIsRefusedWithItsCodeAndText) {
  ConnInfo peer = end(ConnRole::Receiver, 1, 0, 0x200, kV4b);
  ConnInfo c = peer;
  c.dstRank = 5;
  EXPECT_EQ(check(c).code, weftRemoteError);
  EXPECT_EQ(check(c).why.rfind("refused what the peer sent: ", 0), 0u) << check(c).why;
  c = peer;
  c.usable = 0;
  EXPECT_EQ(check(c).code, weftRemoteError);
  EXPECT_EQ(check(c).why, "the peer has no usable IB port");
  c = peer;
  c.nQps = 2;
  c.qpn[1] = 0x201;
  EXPECT_EQ(check(c).code, weftInvalidUsage);
  EXPECT_EQ(check(c).why, "WEFT_IB_QPS_PER_CONNECTION differs (1 here, 2 on the peer)");
  c = peer;
  c.nSlots = 4;
  EXPECT_EQ(check(c).why, "FIFO geometry differs (8 x 524288 here, 4 x 524288 on the peer)");
  c = peer;
  c.linkLayer = 1;
  EXPECT_EQ(check(c).why, "link layers differ (RoCE here, the peer's is code 1)");
  c = peer;
  c.pkey = 0x8002;
  EXPECT_EQ(check(c).why,
            "partition keys differ (0xffff here, 0x8002 on the peer): the QPs could not reach each other "
            "(WEFT_IB_PKEY=0 here; check the partition configuration of both hosts)");
  c = peer;
  c.gid = kV6;
  EXPECT_EQ(check(c).code, weftInvalidUsage);
  EXPECT_EQ(check(c).why.rfind("RoCE GIDs cannot reach each other: address families differ", 0), 0u) << check(c).why;
  c = peer;
  c.gid = Gid{};
  c.subnetPrefix = 7;  // InfiniBand: another subnet needs the GID
  EXPECT_EQ(check(c, LinkLayer::InfiniBand).why.rfind("IB GIDs cannot reach each other: ", 0), 0u);
}

TEST(IbFacts, FactsRowsJoinOnlyUsableEndsOfOneLinkLayer) {
  std::string why;
  EXPECT_TRUE(ibFactsJoin(IbFacts{1, 0, 1}, "", IbFacts{1, 0, 1}, 3, &why));
  EXPECT_EQ(why, "IB on both ends");
  EXPECT_FALSE(ibFactsJoin(IbFacts{1, 0, 1}, "", IbFacts{1, 0, 2}, 3, &why));
  EXPECT_EQ(why, "IB link layers differ (IB here, RoCE on rank 3)");
  EXPECT_FALSE(ibFactsJoin(IbFacts{1, 0, 1}, "", IbFacts{0, 0, 1}, 3, &why));
  EXPECT_FALSE(ibFactsJoin(IbFacts{0, 0, 1}, "no port", IbFacts{1, 0, 1}, 3, &why));
  EXPECT_EQ(why, "no usable IB on this rank: no port");
  // A code outside 1..3 (a peer's row holds anything) is an unknown link.
  EXPECT_EQ(linkLayerFromFacts(-7), LinkLayer::Unknown);
  EXPECT_EQ(linkLayerFromFacts(4), LinkLayer::Unknown);
  EXPECT_TRUE(ibFactsJoin(IbFacts{1, 0, 1}, "", IbFacts{5, 0, 1000}, 3, &why));
}

TEST(IbFacts, VerbsCodesAndTexts) {
  EXPECT_EQ(linkLayerOfVerbsCode(0), LinkLayer::InfiniBand);
  EXPECT_EQ(linkLayerOfVerbsCode(1), LinkLayer::InfiniBand);
  EXPECT_EQ(linkLayerOfVerbsCode(2), LinkLayer::Ethernet);
  EXPECT_EQ(linkLayerOfVerbsCode(3), LinkLayer::Unknown);
  EXPECT_EQ(portStateName("PORT_DOWN"), "DOWN");
  EXPECT_EQ(portStateName("ACTIVE"), "ACTIVE");
  EXPECT_EQ(portStateName("PORT_"), "");
  EXPECT_EQ(gidEntriesToRead(16), 16);
  EXPECT_EQ(gidEntriesToRead(100000), 256);
  EXPECT_LE(gidEntriesToRead(-5), 0);
  EXPECT_EQ(gidTypeFromWire(2), GidType::RoceV2);
  EXPECT_EQ(gidTypeFromWire(0), GidType::Unknown);
  EXPECT_EQ(gidTypeFromWire(200), GidType::Unknown);
}
