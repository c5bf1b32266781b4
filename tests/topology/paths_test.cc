#include <gtest/gtest.h>

#include "src/topology/paths.h"
#include "tests/topology/topo_test_util.h"

namespace weft::topo {
namespace {

using namespace testing;

TEST(TopoPaths, PcieBoxTypesAndBottlenecks) {
  System s = loadFile(dataFile(kPcieBox));
  auto path = [&](const char* a, const char* b) { return findPath(s, node(s, a), node(s, b)); };
  Path p = path("box0/gpu0", "box0/gpu1");
  EXPECT_EQ(p.type, PathType::Pix);
  EXPECT_DOUBLE_EQ(p.bw, 24);
  EXPECT_EQ(p.hops.size(), 2u);
  p = path("box0/gpu0", "box0/gpu2");
  EXPECT_EQ(p.type, PathType::Sys);
  EXPECT_DOUBLE_EQ(p.bw, 20);  // the SMP link
  EXPECT_EQ(p.nodes.size(), 6u);  // gpu0 sw0 cpu0 cpu1 sw1 gpu2
  EXPECT_EQ(path("box0/gpu3", "box0/nic1").type, PathType::Pix);
  EXPECT_EQ(path("box0/gpu0", "box0/cpu0").type, PathType::Phb);
  EXPECT_EQ(path("box0/gpu0", "box0/gpu0").type, PathType::Loc);
  // Direction is recorded: the reverse path uses the same links backwards.
  Path fwd = path("box0/gpu0", "box0/gpu2"), rev = path("box0/gpu2", "box0/gpu0");
  ASSERT_EQ(fwd.hops.size(), rev.hops.size());
  EXPECT_EQ(fwd.hops.front().link, rev.hops.back().link);
  EXPECT_NE(fwd.hops.front().forward, rev.hops.back().forward);
}

TEST(TopoPaths, NvSwitchBeatsPcie) {
  System s = loadFile(dataFile(kDgx));
  Path p = findPath(s, node(s, "dgx0/gpu0"), node(s, "dgx0/gpu7"));
  EXPECT_EQ(p.type, PathType::Nvl);
  EXPECT_DOUBLE_EQ(p.bw, 240);
  // GPUs do not forward: the NIC path goes over PCIe, not gpu0's NVLink.
  Path n = findPath(s, node(s, "dgx0/gpu0"), node(s, "dgx0/nic1"));
  EXPECT_EQ(n.type, PathType::Pix);
  EXPECT_DOUBLE_EQ(n.bw, 24);
  EXPECT_EQ(findPath(s, node(s, "dgx0/gpu0"), node(s, "dgx0/nic7")).type, PathType::Sys);
  EXPECT_EQ(findPath(s, node(s, "dgx0/gpu0"), node(s, "dgx0/nic2")).type, PathType::Phb);
}

TEST(TopoPaths, AcrossTheClusterNetwork) {
  System s = loadFile(dataFile(kCluster));
  Path p = findPath(s, node(s, "box0/gpu0"), node(s, "box1/gpu0"));
  EXPECT_EQ(p.type, PathType::Net);
  EXPECT_DOUBLE_EQ(p.bw, 12.5);
  Path slow = findPath(s, node(s, "box0/gpu0"), node(s, "box3/gpu1"));
  EXPECT_EQ(slow.type, PathType::Net);
  EXPECT_DOUBLE_EQ(slow.bw, 5);
  EXPECT_GT(slow.latencyUs, p.latencyUs);  // one more switch hop
  // Inside one host the path never leaves through the network.
  Path local = findPath(s, node(s, "box2/gpu0"), node(s, "box2/gpu3"));
  EXPECT_EQ(local.type, PathType::Sys);
}

TEST(TopoPaths, DisconnectedNodes) {
  System s;
  s.addHost("h");
  Node a, b;
  a.id = "cpu0";
  b.id = "cpu1";
  s.addNode(a);
  s.addNode(b);
  Path p = findPath(s, 0, 1);
  EXPECT_EQ(p.type, PathType::Dis);
  EXPECT_EQ(p.bw, 0);
}

}  // namespace
}  // namespace weft::topo
