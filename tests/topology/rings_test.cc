#include <gtest/gtest.h>

#include <set>

#include "algorithms/coll_args.h"
#include "algorithms/double_tree.h"
#include "algorithms/ring.h"
#include "src/topology/rings.h"
#include "src/util/error.h"
#include "tests/topology/topo_test_util.h"

namespace weft::topo {
namespace {

using namespace testing;

std::vector<int> devicesInOrder(const std::vector<int>& order, const std::vector<RankPlace>& places) {
  std::vector<int> out;
  for (int r : order) out.push_back(places[r].device);
  return out;
}

TEST(TopoRings, PcieBoxKeepsSwitchMatesAdjacent) {
  System s = loadFile(dataFile(kPcieBox));
  auto places = defaultPlaces(s, true);
  ASSERT_EQ(places.size(), 4u);
  RingSet one = buildRings(s, places, 1);
  ASSERT_EQ(one.channels.size(), 1u);
  // gpu0,gpu1 share sw0 and gpu2,gpu3 share sw1: the ring crosses the SMP
  // link once each way. Hand calculation: every link is used once per
  // direction, so the bottleneck is the SMP link, 20 GB/s.
  EXPECT_EQ(one.channels[0].order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(one.channels[0].bw, 20.0);
  EXPECT_EQ(one.channels[0].intraType, PathType::Sys);
  // Two channels share the SMP link: 20 / 2 = 10 GB/s each.
  RingSet two = buildRings(s, places, 2);
  EXPECT_DOUBLE_EQ(two.channels[0].bw, 10.0);
  EXPECT_DOUBLE_EQ(two.channels[1].bw, 10.0);
  EXPECT_DOUBLE_EQ(two.totalBw(), 20.0);
  // Ranks given in a bad order still come out switch-contiguous.
  std::vector<RankPlace> scrambled = {places[0], places[2], places[1], places[3]};
  RingSet r = buildRings(s, scrambled, 1);
  auto devs = devicesInOrder(r.channels[0].order, scrambled);
  auto neighbours = [&](const char* a, const char* b) {
    auto i = std::find(devs.begin(), devs.end(), node(s, a)) - devs.begin();
    auto j = std::find(devs.begin(), devs.end(), node(s, b)) - devs.begin();
    return (i + 1) % 4 == j || (j + 1) % 4 == i;
  };
  EXPECT_TRUE(neighbours("box0/gpu0", "box0/gpu1"));
  EXPECT_TRUE(neighbours("box0/gpu2", "box0/gpu3"));
  EXPECT_DOUBLE_EQ(r.channels[0].bw, 20.0);
}

TEST(TopoRings, PcieBoxNicChoiceAndTransports) {
  System s = loadFile(dataFile(kPcieBox));
  std::vector<int> gpus = s.nodesOf(NodeKind::Gpu, 0);
  auto nics = chooseNics(s, gpus);
  ASSERT_EQ(nics.size(), 4u);
  EXPECT_EQ(nics[0].nic, node(s, "box0/nic0"));
  EXPECT_EQ(nics[1].nic, node(s, "box0/nic0"));
  EXPECT_EQ(nics[2].nic, node(s, "box0/nic1"));
  EXPECT_EQ(nics[3].nic, node(s, "box0/nic1"));
  EXPECT_EQ(nics[0].type, PathType::Pix);
  EXPECT_DOUBLE_EQ(nics[0].bw, 12.5);  // the NIC's 100 Gb/s, below the 24 GB/s PCIe path
  EXPECT_NE(nics[0].reason.find("PIX"), std::string::npos) << nics[0].reason;
  auto places = defaultPlaces(s, true);
  EXPECT_STREQ(transportFor(s, places[0], places[1]), "p2p");
  EXPECT_STREQ(transportFor(s, places[0], places[2]), "shm");
}

TEST(TopoRings, DgxNvSwitchRingAndOneNicPerGpu) {
  System s = loadFile(dataFile(kDgx));
  auto places = defaultPlaces(s, true);
  ASSERT_EQ(places.size(), 8u);
  RingSet rings = buildRings(s, places, 4);
  // Every GPU sends and receives once per channel on its 240 GB/s NVLink
  // bundle: 4 channels get 240 / 4 = 60 GB/s each.
  for (const auto& c : rings.channels) {
    EXPECT_EQ(c.order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_DOUBLE_EQ(c.bw, 60.0);
    EXPECT_EQ(c.intraType, PathType::Nvl);
  }
  EXPECT_DOUBLE_EQ(rings.totalBw(), 240.0);
  // Each PCIe switch holds 2 GPUs and 2 NICs: the tie is spread, GPU k gets NIC k.
  auto gpus = s.nodesOf(NodeKind::Gpu, 0);
  auto nics = chooseNics(s, gpus);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(nics[k].nic, node(s, "dgx0/nic" + std::to_string(k))) << k;
    EXPECT_EQ(nics[k].type, PathType::Pix);
    EXPECT_DOUBLE_EQ(nics[k].bw, 24.0);  // PCIe gen4 x16 below the NIC's 25 GB/s
  }
  EXPECT_STREQ(transportFor(s, places[0], places[7]), "p2p");
}

TEST(TopoRings, ClusterHostsContiguousNicsSpreadAndSlowLeafBounds) {
  System s = loadFile(dataFile(kCluster));
  auto places = defaultPlaces(s, true);
  ASSERT_EQ(places.size(), 16u);
  RingSet rings = buildRings(s, places, 2);
  EXPECT_EQ(rings.hosts, (std::vector<int>{0, 1, 2, 3}));
  for (size_t c = 0; c < 2; ++c) {
    const auto& ch = rings.channels[c];
    SCOPED_TRACE(c);
    ASSERT_EQ(ch.order.size(), 16u);
    for (size_t i = 0; i < 16; ++i) EXPECT_EQ(places[ch.order[i]].host, static_cast<int>(i / 4));
    // Channel 0 leaves every host through nic0, channel 1 through nic1.
    for (int h = 0; h < 4; ++h)
      EXPECT_EQ(ch.nics[h], node(s, "box" + std::to_string(h) + "/nic" + std::to_string(c)));
    // Hand calculation: box3's 40 Gb/s NICs carry one channel each way,
    // 5 GB/s; everything else is wider (SMP 20/2, 100 Gb/s NICs 12.5,
    // leaf uplink 50/2).
    EXPECT_DOUBLE_EQ(ch.bw, 5.0);
    // Each host's chain enters and leaves on the GPUs beside the channel's NIC.
    EXPECT_EQ(ch.nicType, PathType::Pix);
  }
  auto dev = [&](int c, int i) { return places[rings.channels[c].order[i]].device; };
  EXPECT_EQ(dev(0, 0), node(s, "box0/gpu0"));
  EXPECT_EQ(dev(0, 3), node(s, "box0/gpu1"));
  EXPECT_EQ(dev(1, 0), node(s, "box0/gpu2"));
  EXPECT_EQ(dev(1, 3), node(s, "box0/gpu3"));

  // Without box3 the slow leaf is out of the ring and the SMP link, shared
  // by both channels in each direction, is the bottleneck: 20 / 2 = 10.
  std::vector<RankPlace> fast(places.begin(), places.begin() + 12);
  RingSet fr = buildRings(s, fast, 2);
  EXPECT_DOUBLE_EQ(fr.channels[0].bw, 10.0);
  EXPECT_DOUBLE_EQ(fr.channels[1].bw, 10.0);
  // One channel alone: SMP 20, NIC 12.5 -> 12.5.
  EXPECT_DOUBLE_EQ(buildRings(s, fast, 1).channels[0].bw, 12.5);

  TreeInputs t = treeInputs(rings, places);
  EXPECT_EQ(t.hosts, (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(t.chains.size(), 4u);
  for (int h = 0; h < 4; ++h) EXPECT_EQ(t.chains[h].size(), 4u);
  EXPECT_EQ(t.nics[3], node(s, "box3/nic0"));

  TopoSummary sum = summarize(s, places, 2);
  EXPECT_EQ(sum.nHosts, 4);
  EXPECT_EQ(sum.maxRanksPerHost, 4);
  EXPECT_DOUBLE_EQ(sum.ringBwPerChannel, 5.0);
  EXPECT_DOUBLE_EQ(sum.interHostBw, 5.0);
  EXPECT_STREQ(transportFor(s, places[0], places[4]), "net");
}

TEST(TopoRings, CpuOnlyHost) {
  System s = loadFile(dataFile(kCpuOnly));
  auto places = defaultPlaces(s, false, 2);
  ASSERT_EQ(places.size(), 2u);
  RingSet rings = buildRings(s, places, 1);
  EXPECT_EQ(rings.channels[0].order, (std::vector<int>{0, 1}));
  EXPECT_EQ(rings.channels[0].intraType, PathType::Loc);
  EXPECT_DOUBLE_EQ(rings.channels[0].bw, kLocalBw);
  auto nics = chooseNics(s, {node(s, "vm/cpu0")});
  EXPECT_EQ(nics[0].nic, node(s, "vm/nic0"));  // eth0, never lo
  EXPECT_STREQ(transportFor(s, places[0], places[1]), "shm");
}

TEST(TopoRings, RejectsBadPlaces) {
  System s = loadFile(dataFile(kPcieBox));
  EXPECT_THROW(buildRings(s, {{0, node(s, "box0/nic0")}}, 1), Error);
  EXPECT_THROW(buildRings(s, {{0, 999}}, 1), Error);
  EXPECT_THROW(buildRings(s, defaultPlaces(s, true), 0), Error);
}

// Every shipped file drives ring and double-tree construction end to end:
// the topology's order is a valid ring for the plan builder, and its host
// chains give the double tree's host map.
TEST(TopoRings, EveryShippedFileDrivesRingAndTreeBuilders) {
  for (const auto& f : shippedFiles()) {
    SCOPED_TRACE(f);
    System s = loadFile(f);
    bool gpus = false;
    for (const Node& n : s.nodes) gpus |= n.kind == NodeKind::Gpu;
    auto places = defaultPlaces(s, gpus, 2);
    ASSERT_FALSE(places.empty());
    const int nranks = static_cast<int>(places.size());
    RingSet rings = buildRings(s, places, 2);
    for (const auto& c : rings.channels) {
      EXPECT_GT(c.bw, 0);
      std::set<int> seen(c.order.begin(), c.order.end());
      EXPECT_EQ(seen.size(), places.size());
      // Hosts contiguous: the host changes exactly once per host boundary.
      int changes = 0;
      for (int i = 0; i < nranks; ++i)
        changes += places[c.order[i]].host != places[c.order[(i + 1) % nranks]].host;
      EXPECT_EQ(changes, rings.hosts.size() > 1 ? static_cast<int>(rings.hosts.size()) : 0);
    }
    for (int r = 0; r < nranks; ++r) {
      algo::CollArgs a;
      a.nranks = nranks;
      a.rank = r;
      a.count = 1000;
      a.order = rings.channels[0].order;
      EXPECT_NO_THROW(algo::validateArgs(a));
      EXPECT_NO_THROW(algo::buildRing(a));
    }
    TreeInputs t = treeInputs(rings, places);
    std::vector<int> hostOf(nranks);
    for (size_t h = 0; h < t.chains.size(); ++h)
      for (int r : t.chains[h]) hostOf[r] = static_cast<int>(h);
    auto trees = algo::doubleTreeParents(hostOf);
    for (const auto& parents : trees) EXPECT_EQ(std::count(parents.begin(), parents.end(), -1), 1);
    TopoSummary sum = summarize(s, places, 2);
    EXPECT_EQ(sum.nHosts, static_cast<int>(s.hosts.size()));
    EXPECT_GT(sum.ringBwPerChannel, 0);
  }
}

}  // namespace
}  // namespace weft::topo
