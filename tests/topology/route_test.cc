// Per-peer transport choice as a pure function, and transportFor() on the
// shipped files feeding it.
#include <gtest/gtest.h>

#include "src/topology/comm_topo.h"
#include "src/topology/rings.h"
#include "src/topology/route.h"
#include "topo_test_util.h"

namespace weft::topo {
namespace {

TEST(Route, SameHostIsShm) {
  RouteQuery q;
  q.sameHost = true;
  RouteDecision d = chooseRoute(q);
  EXPECT_EQ(d.route, Route::Shm);
  EXPECT_EQ(d.why, "same host");
  q.topoKind = PeerTopoKind::P2p;
  d = chooseRoute(q);
  EXPECT_EQ(d.route, Route::Shm);
  EXPECT_EQ(d.why.rfind("same host (GPUs P2P-capable", 0), 0u) << d.why;
}

TEST(Route, ShmDisabledGoesToNetwork) {
  RouteQuery q;
  q.sameHost = true;
  q.shmDisabled = true;
  q.selfIbProblem = "no HCA";
  RouteDecision d = chooseRoute(q);
  EXPECT_EQ(d.route, Route::Socket);
  EXPECT_EQ(d.why, "WEFT_SHM_DISABLE=1, no usable IB on this rank: no HCA");
}

TEST(Route, DifferentHosts) {
  RouteQuery q;
  q.peer = 3;
  q.selfIb = q.peerIb = true;
  RouteDecision d = chooseRoute(q);
  EXPECT_EQ(d.route, Route::Ib);
  EXPECT_EQ(d.why, "hosts differ, IB on both ends");
  q.peerIb = false;
  d = chooseRoute(q);
  EXPECT_EQ(d.route, Route::Socket);
  EXPECT_EQ(d.why, "hosts differ, no usable IB on rank 3");
  EXPECT_TRUE(d.ibFallback);
  EXPECT_FALSE(d.impossible);
  q.forceIb = true;
  EXPECT_TRUE(chooseRoute(q).impossible);
  q.forceIb = false;
  q.peerIb = true;
  q.forceSocket = true;
  d = chooseRoute(q);
  EXPECT_EQ(d.route, Route::Socket);
  EXPECT_EQ(d.why, "hosts differ, network forced to Socket");
  EXPECT_FALSE(d.ibFallback);
}

// Both ends decide alone: the decision must not depend on which end asks.
TEST(Route, SymmetricOnShippedFiles) {
  for (const std::string& file : testing::shippedFiles()) {
    System sys = loadFile(file);
    for (bool gpus : {true, false}) {
      auto places = defaultPlaces(sys, gpus, 2);
      for (size_t a = 0; a < places.size(); ++a)
        for (size_t b = 0; b < places.size(); ++b) {
          std::string ab = transportFor(sys, places[a], places[b]);
          EXPECT_EQ(ab, transportFor(sys, places[b], places[a])) << file;
          EXPECT_EQ(ab == "net", places[a].host != places[b].host);
          RouteQuery q;
          q.sameHost = places[a].host == places[b].host;
          q.topoKind = peerTopoKind(sys, places[a], places[b]);
          EXPECT_STREQ(toString(q.topoKind), ab.c_str());
          EXPECT_EQ(chooseRoute(q).route == Route::Shm, q.sameHost);
        }
    }
  }
  System dgx = loadFile(testing::dataFile(testing::kDgx));
  auto g = defaultPlaces(dgx, true);
  EXPECT_STREQ(transportFor(dgx, g[0], g[5]), "p2p");
}

}  // namespace
}  // namespace weft::topo

namespace weft::topo {
namespace {

// Device-buffer traffic: both ends must reach the same path from shared
// facts, whichever of them asks.
TEST(DevicePath, P2pFirstThenIbWhenEitherEndHasGpuDirect) {
  EXPECT_EQ(chooseDevicePath(true, Route::Ib, true, true).path, DevicePath::P2p);
  EXPECT_EQ(chooseDevicePath(true, Route::Shm, false, false).path, DevicePath::P2p);
  for (Route r : {Route::Shm, Route::Socket})
    for (bool self : {false, true})
      for (bool peer : {false, true}) EXPECT_EQ(chooseDevicePath(false, r, self, peer).path, DevicePath::Host);
  EXPECT_EQ(chooseDevicePath(false, Route::Ib, false, false).path, DevicePath::Host);
  EXPECT_EQ(chooseDevicePath(false, Route::Ib, false, false).why, "no GPU Direct RDMA at either end");
  for (bool self : {false, true})
    for (bool peer : {false, true}) {
      DevicePathDecision mine = chooseDevicePath(false, Route::Ib, self, peer);
      DevicePathDecision theirs = chooseDevicePath(false, Route::Ib, peer, self);
      EXPECT_EQ(mine.path, theirs.path) << self << peer;
      EXPECT_EQ(mine.path == DevicePath::Ib, self || peer);
    }
  EXPECT_EQ(chooseDevicePath(false, Route::Ib, true, false).why, "GPU Direct RDMA at this end");
  EXPECT_EQ(chooseDevicePath(false, Route::Ib, false, true).why, "GPU Direct RDMA at the peer's end");
  EXPECT_EQ(chooseDevicePath(false, Route::Ib, true, true).why, "GPU Direct RDMA at both ends");
}

}  // namespace
}  // namespace weft::topo
