// The choice of a transport per pair of ranks: the core's walk down the
// transport list (chooseTransport) over each transport's own pure decision
// (shmCanJoin, ibCanJoin, the socket always can), the device-buffer
// decision of IB (gdrCanJoin), and the topology's pair kinds feeding them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "src/topology/comm_topo.h"
#include "src/topology/rings.h"
#include "topo_test_util.h"
#include "transports/ib/ib_transport.h"
#include "transports/registry.h"
#include "transports/shm/shm_transport.h"

namespace weft {
namespace {

// What both ends know about a pair, as the transports' canConnect read it.
struct Pair {
  bool sameHost = false;
  bool shmDisabled = false;      // WEFT_SHM_DISABLE
  std::string net;               // WEFT_NET
  bool selfIb = false, peerIb = false;
  std::string selfIbProblem;     // why this rank has no usable IB
  ib::LinkLayer selfLink = ib::LinkLayer::Unknown, peerLink = ib::LinkLayer::Unknown;
  int peer = -1;
  topo::PeerTopoKind topoKind = topo::PeerTopoKind::Unknown;
};

struct Chosen {
  std::string transport;  // "" when none
  TransportChoice choice;
};

// The host list's choice, each listed transport answering by its pure rule.
Chosen choose(const Pair& p) {
  const auto& list = hostTransportList();
  Chosen c;
  c.choice = chooseTransport(list, p.net, [&](size_t i, std::string* why) {
    const std::string name = list[i].name;
    if (name == "SHM") return shmCanJoin(p.shmDisabled, p.sameHost, p.topoKind, why);
    if (name == "IB") return ib::ibCanJoin(p.selfIb, p.selfIbProblem, p.peerIb, p.peer, why, p.selfLink, p.peerLink);
    EXPECT_EQ(name, "Socket");
    return true;
  });
  if (c.choice.index >= 0) c.transport = list[c.choice.index].name;
  return c;
}

TEST(TransportChoice, ListsInPriorityOrder) {
  const auto& host = hostTransportList();
  ASSERT_EQ(host.size(), 3u);
  EXPECT_STREQ(host[0].name, "SHM");
  EXPECT_STREQ(host[1].name, "IB");
  EXPECT_STREQ(host[2].name, "Socket");
  EXPECT_TRUE(host[2].lastResort);
  EXPECT_STREQ(deviceTransportList().at(0).name, "P2P");
  EXPECT_EQ(networkTransportNames(), "Socket or IB");
  EXPECT_TRUE(isNetworkTransport("socket"));
  EXPECT_TRUE(isNetworkTransport("IB"));
  EXPECT_FALSE(isNetworkTransport("SHM"));
  EXPECT_FALSE(isNetworkTransport("ucx"));
  // Every listed transport names itself as the list does.
  for (const auto* list : {&hostTransportList(), &deviceTransportList()})
    for (const TransportEntry& e : *list) EXPECT_STREQ(e.make()->name(), e.name);
}

TEST(TransportChoice, SameHostIsShm) {
  Pair p;
  p.sameHost = true;
  Chosen c = choose(p);
  EXPECT_EQ(c.transport, "SHM");
  EXPECT_EQ(c.choice.why, "same host");
  p.topoKind = topo::PeerTopoKind::P2p;
  c = choose(p);
  EXPECT_EQ(c.transport, "SHM");
  EXPECT_EQ(c.choice.why.rfind("same host (GPUs P2P-capable", 0), 0u) << c.choice.why;
  p.net = "IB";  // the network is for other hosts
  EXPECT_EQ(choose(p).transport, "SHM");
}

TEST(TransportChoice, ShmDisabledGoesToNetwork) {
  Pair p;
  p.sameHost = true;
  p.shmDisabled = true;
  p.selfIbProblem = "no HCA";
  Chosen c = choose(p);
  EXPECT_EQ(c.transport, "Socket");
  EXPECT_EQ(c.choice.why, "WEFT_SHM_DISABLE=1, no usable IB on this rank: no HCA");
  p.selfIb = p.peerIb = true;
  c = choose(p);
  EXPECT_EQ(c.transport, "IB");
  EXPECT_EQ(c.choice.why, "WEFT_SHM_DISABLE=1, IB on both ends");
}

// An IB port cannot reach a RoCE port: the pair takes sockets (both ends
// see the same two facts, so they agree), or fails init clearly when
// WEFT_NET forces IB, instead of failing at connect.
TEST(TransportChoice, IbLinkLayersMustAgree) {
  Pair p;
  p.peer = 2;
  p.selfIb = p.peerIb = true;
  p.selfLink = ib::LinkLayer::InfiniBand;
  p.peerLink = ib::LinkLayer::Ethernet;
  Chosen c = choose(p);
  EXPECT_EQ(c.transport, "Socket");
  EXPECT_EQ(c.choice.why, "hosts differ, IB link layers differ (IB here, RoCE on rank 2)");
  p.net = "IB";
  c = choose(p);
  EXPECT_TRUE(c.choice.impossible);
  p.net = "";
  p.peerLink = ib::LinkLayer::InfiniBand;
  EXPECT_EQ(choose(p).transport, "IB");
}

TEST(TransportChoice, DifferentHosts) {
  Pair p;
  p.peer = 3;
  p.selfIb = p.peerIb = true;
  Chosen c = choose(p);
  EXPECT_EQ(c.transport, "IB");
  EXPECT_EQ(c.choice.why, "hosts differ, IB on both ends");
  EXPECT_FALSE(c.choice.warnFallback);
  p.peerIb = false;
  c = choose(p);
  EXPECT_EQ(c.transport, "Socket");
  EXPECT_EQ(c.choice.why, "hosts differ, no usable IB on rank 3");
  EXPECT_TRUE(c.choice.warnFallback);
  EXPECT_FALSE(c.choice.impossible);
  p.net = "IB";
  c = choose(p);
  EXPECT_TRUE(c.choice.impossible);
  EXPECT_EQ(c.choice.index, -1);
  EXPECT_STREQ(c.choice.forced, "IB");
  EXPECT_EQ(c.choice.why, "hosts differ, no usable IB on rank 3");
  p.net = "ib";  // any case
  EXPECT_TRUE(choose(p).choice.impossible);
  p.net = "Socket";
  p.peerIb = true;
  c = choose(p);
  EXPECT_EQ(c.transport, "Socket");
  EXPECT_EQ(c.choice.why, "hosts differ, network forced to Socket");
  EXPECT_FALSE(c.choice.warnFallback);
  p.net = "socket";
  EXPECT_EQ(choose(p).choice.why, "hosts differ, network forced to Socket");
  p.net = "";
  p.selfIb = false;
  p.selfIbProblem = "WEFT_IB_DISABLE=1";
  c = choose(p);
  EXPECT_EQ(c.choice.why, "hosts differ, no usable IB on this rank: WEFT_IB_DISABLE=1");
  EXPECT_TRUE(c.choice.warnFallback);
}

// Both ends decide alone: the decision must not depend on which end asks.
TEST(TransportChoice, SymmetricOnShippedFiles) {
  using namespace topo;
  for (const std::string& file : testing::shippedFiles()) {
    System sys = loadFile(file);
    for (bool gpus : {true, false}) {
      auto places = defaultPlaces(sys, gpus, 2);
      for (size_t a = 0; a < places.size(); ++a)
        for (size_t b = 0; b < places.size(); ++b) {
          std::string ab = transportFor(sys, places[a], places[b]);
          EXPECT_EQ(ab, transportFor(sys, places[b], places[a])) << file;
          EXPECT_EQ(ab == "net", places[a].host != places[b].host);
          Pair p;
          p.sameHost = places[a].host == places[b].host;
          p.topoKind = peerTopoKind(sys, places[a], places[b]);
          EXPECT_STREQ(toString(p.topoKind), ab.c_str());
          EXPECT_EQ(p.topoKind, peerTopoKind(sys, places[b], places[a]));
          EXPECT_EQ(choose(p).transport == "SHM", p.sameHost);
        }
    }
  }
  System dgx = loadFile(testing::dataFile(testing::kDgx));
  auto g = defaultPlaces(dgx, true);
  EXPECT_EQ(peerTopoKind(dgx, g[0], g[5]), PeerTopoKind::P2p);
}

// Device-buffer traffic over IB: connections of its own when either end can
// do GPUDirect RDMA; both ends reach the same answer whichever asks.
TEST(TransportChoice, IbDeviceConnectionsWhenEitherEndHasGpuDirect) {
  std::string why;
  EXPECT_FALSE(ib::gdrCanJoin(false, false, &why));
  EXPECT_EQ(why, "no GPU Direct RDMA at either end");
  for (bool self : {false, true})
    for (bool peer : {false, true}) {
      std::string mine, theirs;
      EXPECT_EQ(ib::gdrCanJoin(self, peer, &mine), ib::gdrCanJoin(peer, self, &theirs)) << self << peer;
      EXPECT_EQ(ib::gdrCanJoin(self, peer, &mine), self || peer);
    }
  ib::gdrCanJoin(true, false, &why);
  EXPECT_EQ(why, "GPU Direct RDMA at this end");
  ib::gdrCanJoin(false, true, &why);
  EXPECT_EQ(why, "GPU Direct RDMA at the peer's end");
  ib::gdrCanJoin(true, true, &why);
  EXPECT_EQ(why, "GPU Direct RDMA at both ends");
}

// What goes over the wire: no bytes a transport did not write.
TEST(TransportChoice, FactsRowsRoundTrip) {
  PeerInfo p;
  ib::IbFacts f;
  f.usable = 1;
  f.gdrMode = 2;
  writeFacts(p, 1, f);
  ib::IbFacts back = readFacts<ib::IbFacts>(p, 1);
  EXPECT_EQ(back.usable, 1);
  EXPECT_EQ(back.gdrMode, 2);
  EXPECT_EQ(readFacts<ib::IbFacts>(p, 0).usable, 0);
  EXPECT_EQ(readFacts<ib::IbFacts>(p, -1).gdrMode, 0);
  PeerInfo zero;
  EXPECT_EQ(std::memcmp(zero.transportFacts, PeerInfo{}.transportFacts, sizeof zero.transportFacts), 0);
}

}  // namespace
}  // namespace weft
