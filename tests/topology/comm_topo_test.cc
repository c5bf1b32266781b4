// The topology as communicators use it, driven from every shipped file:
// per-host views composed into rings (checked against buildRings on the
// whole cluster), host contiguity, cost inputs and the algorithm selector.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/topology/comm_topo.h"
#include "src/topology/cost_inputs.h"
#include "src/util/error.h"
#include "topo_test_util.h"

namespace weft::topo {
namespace {

using testing::dataFile;
using testing::shippedFiles;

// The measured defaults of src/core (shm 3 us / 8 GB/s, network 25 us / 2.5 GB/s).
algo::CostInputs measured() {
  algo::CostInputs c;
  c.intra = {3.0, 8.0};
  c.inter = {25.0, 2.5};
  return c;
}

// What each communicator rank computes: its host's views, all-gathered,
// composed. hostOf numbers hosts by first appearance, like the communicator.
CommRings composeLikeComm(const System& sys, const std::vector<RankPlace>& places, int nChannels) {
  std::vector<int> hostOf;
  std::map<int, int> index;
  for (const auto& p : places) hostOf.push_back(index.emplace(p.host, static_cast<int>(index.size())).first->second);
  std::vector<HostRingView> views(places.size());
  for (const auto& [host, h] : index) {
    (void)h;
    std::vector<int> members;
    std::vector<RankPlace> hostPlaces;
    for (size_t r = 0; r < places.size(); ++r)
      if (places[r].host == host) {
        members.push_back(static_cast<int>(r));
        hostPlaces.push_back(places[r]);
      }
    auto v = hostRingViews(sys, hostPlaces, nChannels, index.size() > 1);
    for (size_t i = 0; i < members.size(); ++i) views[members[i]] = v[i];
  }
  return composeRings(hostOf, views, nChannels);
}

bool hostContiguous(const std::vector<int>& order, const std::vector<RankPlace>& places) {
  std::set<int> done;
  int current = -1;
  for (int r : order) {
    if (places[r].host != current) {
      if (done.count(places[r].host)) return false;
      if (current >= 0) done.insert(current);
      current = places[r].host;
    }
  }
  return true;
}

// Plausible layouts: one rank per GPU (GPU files), and CPU ranks (2 per
// NUMA node of every host) as host-buffer communicators place them.
std::vector<std::vector<RankPlace>> layouts(const System& sys) {
  std::vector<std::vector<RankPlace>> out;
  auto gpus = defaultPlaces(sys, true);
  if (!gpus.empty()) out.push_back(gpus);
  int numas = static_cast<int>(sys.nodesOf(NodeKind::Cpu, 0).size());
  out.push_back(defaultPlaces(sys, false, 2 * numas));
  return out;
}

TEST(CommTopo, ComposedRingsMatchBuildRingsOnEveryFile) {
  for (const std::string& file : shippedFiles()) {
    System sys = loadFile(file);
    for (const auto& places : layouts(sys))
      for (int ch : {1, 2, 4}) {
        SCOPED_TRACE(file + " ranks " + std::to_string(places.size()) + " channels " + std::to_string(ch));
        RingSet whole = buildRings(sys, places, ch);
        TopoSummary direct = summarize(sys, places, ch);
        CommRings comm = composeLikeComm(sys, places, ch);
        ASSERT_EQ(comm.orders.size(), static_cast<size_t>(ch));
        for (int c = 0; c < ch; ++c) {
          EXPECT_EQ(comm.orders[c], whole.channels[c].order) << "channel " << c;
          EXPECT_TRUE(hostContiguous(comm.orders[c], places));
          std::vector<int> sorted = comm.orders[c];
          std::sort(sorted.begin(), sorted.end());
          for (size_t r = 0; r < sorted.size(); ++r) ASSERT_EQ(sorted[r], static_cast<int>(r));
        }
        EXPECT_EQ(comm.summary.nHosts, direct.nHosts);
        EXPECT_EQ(comm.summary.maxRanksPerHost, direct.maxRanksPerHost);
        EXPECT_NEAR(comm.summary.ringBwPerChannel, direct.ringBwPerChannel, 1e-3);
        EXPECT_NEAR(comm.summary.ringHostBwPerChannel, direct.ringHostBwPerChannel, 1e-3);
        EXPECT_NEAR(comm.summary.interHostBw, direct.interHostBw, 1e-3);
        ASSERT_EQ(comm.summary.hostNicBw.size(), direct.hostNicBw.size());
        for (size_t h = 0; h < direct.hostNicBw.size(); h++)
          EXPECT_NEAR(comm.summary.hostNicBw[h], direct.hostNicBw[h], 1e-3) << "host " << h;
        EXPECT_EQ(comm.summary.intraType, direct.intraType);
        EXPECT_EQ(comm.summary.nicType, direct.nicType);
      }
  }
}

algo::AlgoId pick(plan::Coll c, const algo::CostInputs& base, uint64_t bytes) {
  algo::CostInputs in = base;
  in.bytes = bytes;
  // Among the FIFO algorithms: on one host the one-shot algorithm wins small calls.
  return algo::selectAlgo(c, in, algo::parseAlgoFilter("^oneshot"));
}

// Every file, every layout: the selector answers for 8 B .. 4 GB, a ring
// (flat, or hierarchical across hosts) wins the largest sizes (it moves
// 2(n-1)/n of the data per rank, the double tree 2), and predicted time
// grows with size.
TEST(CommTopo, SelectorOverEveryFile) {
  for (const std::string& file : shippedFiles()) {
    System sys = loadFile(file);
    for (const auto& places : layouts(sys)) {
      SCOPED_TRACE(file + " ranks " + std::to_string(places.size()));
      const int n = static_cast<int>(places.size());
      algo::CostInputs in = costInputsFromTopology(summarize(sys, places, 2), n, measured());
      EXPECT_GT(in.intra.bandwidthGBs, 0);
      EXPECT_GT(in.inter.bandwidthGBs, 0);
      double last = 0;
      for (uint64_t bytes = 8; bytes <= (4ull << 30); bytes *= 4) {
        in.bytes = bytes;
        algo::AlgoId a = algo::selectAlgo(plan::Coll::AllReduce, in, algo::AlgoFilter());
        double t = algo::estimateUs(plan::Coll::AllReduce, a, in);
        EXPECT_GE(t, last);
        last = t;
        const algo::AlgoId gather = pick(plan::Coll::AllGather, in, bytes);
        EXPECT_TRUE(gather == algo::kRing || gather == algo::kHier) << algo::algoName(gather);
      }
      // Rings (flat, or hierarchical across hosts) win the largest sizes,
      // unless one host's NICs are slower than the others': the flat ring
      // runs at that NIC's pace, where the double tree gives the slow host
      // less to carry (treeNetScale above 1; ClusterHandCalculation...).
      const algo::AlgoId largest = pick(plan::Coll::AllReduce, in, 4ull << 30);
      const bool unevenNics = in.nHosts > 2 && in.treeNetScale > 1;
      if (n > 1)
        EXPECT_TRUE(largest == algo::kRing || largest == algo::kHier || (unevenNics && largest == algo::kDoubleTree))
            << algo::algoName(largest);
    }
  }
}

// The cluster file, one rank per GPU (16 ranks, 4 hosts), 2 channels.
// Hand calculation: box3's 40 Gb/s NICs carry one channel each way ->
// 5 GB/s per channel, 10 GB/s for the ring; the slowest NIC is 5 GB/s, so
// inter = min(5 x 2, 10) = 10. GPU pairs in a box on different sockets are
// not P2P-class: their kernels move the bytes through pinned host memory,
// across each box's 20 GB/s SMP link, which both channels' chains cross
// (10 GB/s each): intra = 20, not the CPU's measured shared-memory copy (8).
// At 20 GB/s the double tree's host phases keep it ahead of the ring at
// every size; with ranks on the CPUs (the CPU copies) the 8 GB/s cap stays.
TEST(CommTopo, ClusterHandCalculationGpuRanksThroughHostMemory) {
  System sys = loadFile(dataFile(testing::kCluster));
  auto places = defaultPlaces(sys, true);
  ASSERT_EQ(places.size(), 16u);
  TopoSummary s = composeLikeComm(sys, places, 2).summary;
  EXPECT_EQ(s.nHosts, 4);
  EXPECT_NEAR(s.ringBwPerChannel, 5.0, 1e-6);
  EXPECT_NEAR(s.interHostBw, 5.0, 1e-6);
  algo::CostInputs in = costInputsFromTopology(s, 16, measured());
  EXPECT_EQ(in.nHosts, 4);
  EXPECT_NEAR(in.inter.bandwidthGBs, 10.0, 1e-6);
  EXPECT_FALSE(s.hostMemoryRanks);
  EXPECT_NEAR(in.intra.bandwidthGBs, 20.0, 1e-6);
  EXPECT_DOUBLE_EQ(in.inter.latencyUs, 25.0);  // latency stays measured
  EXPECT_EQ(pick(plan::Coll::AllReduce, in, 8), algo::kDoubleTree);
  EXPECT_EQ(pick(plan::Coll::AllReduce, in, 64 << 10), algo::kDoubleTree);
  EXPECT_EQ(pick(plan::Coll::AllReduce, in, 1ull << 30), algo::kDoubleTree);
  EXPECT_EQ(pick(plan::Coll::AllReduce, in, 4ull << 30), algo::kDoubleTree);
  // weft-select's summary (summarize) says the same as the communicator's views.
  EXPECT_NEAR(costInputsFromTopology(summarize(sys, places, 2), 16, measured()).intra.bandwidthGBs, 20.0, 1e-6);
  // Two ranks per box on its CPUs: the CPU copies, at the measured 8 GB/s.
  auto cpuPlaces = defaultPlaces(sys, false, 2);
  TopoSummary sc = composeLikeComm(sys, cpuPlaces, 2).summary;
  EXPECT_TRUE(sc.hostMemoryRanks);
  EXPECT_TRUE(summarize(sys, cpuPlaces, 2).hostMemoryRanks);
  EXPECT_NEAR(costInputsFromTopology(sc, int(cpuPlaces.size()), measured()).intra.bandwidthGBs, 8.0, 1e-6);
  // Without box3, both channels cross each box's 20 GB/s SMP link: 10 GB/s
  // each; the NICs (12.5 GB/s) are not the bottleneck.
  std::vector<RankPlace> three;
  for (const auto& p : places)
    if (p.host != 3) three.push_back(p);
  TopoSummary s3 = composeLikeComm(sys, three, 2).summary;
  EXPECT_NEAR(s3.ringBwPerChannel, 10.0, 1e-6);
  EXPECT_NEAR(costInputsFromTopology(s3, 12, measured()).inter.bandwidthGBs, 20.0, 1e-6);
}

// One host: the ring wins large sizes; on the DGX (NVSwitch, P2P-class
// paths) intra bandwidth comes from NVLink, not the shm measurement.
TEST(CommTopo, SingleHostRingWinsLarge) {
  for (const char* name : {testing::kDgx, testing::kPcieBox, testing::kCpuOnly}) {
    SCOPED_TRACE(name);
    System sys = loadFile(dataFile(name));
    for (const auto& places : layouts(sys)) {
      const int n = static_cast<int>(places.size());
      TopoSummary s = composeLikeComm(sys, places, 1).summary;
      EXPECT_EQ(s.nHosts, 1);
      EXPECT_EQ(s.interHostBw, 0);
      algo::CostInputs in = costInputsFromTopology(s, n, measured());
      EXPECT_DOUBLE_EQ(in.inter.bandwidthGBs, 2.5);  // nothing between hosts: measured kept
      EXPECT_EQ(pick(plan::Coll::AllReduce, in, 4ull << 30), algo::kRing);
    }
  }
  System dgx = loadFile(dataFile(testing::kDgx));
  TopoSummary s = composeLikeComm(dgx, defaultPlaces(dgx, true), 1).summary;
  EXPECT_EQ(s.intraType, PathType::Nvl);
  algo::CostInputs in = costInputsFromTopology(s, 8, measured());
  EXPECT_NEAR(in.intra.bandwidthGBs, s.ringBwPerChannel, 1e-9);
  EXPECT_GT(in.intra.bandwidthGBs, 8.0);
}

// Two ranks per GPU on the PCIe box: ranks of one device stay adjacent, and
// switch mates are next to each other.
TEST(CommTopo, RanksOfOneDeviceAdjacent) {
  System sys = loadFile(dataFile(testing::kPcieBox));
  std::vector<RankPlace> places;
  for (int g : sys.nodesOf(NodeKind::Gpu, 0)) places.insert(places.end(), {{0, g}, {0, g}});
  // Interleave so rank order differs from device order: 0,2,4,6 on distinct GPUs.
  std::vector<RankPlace> interleaved(places.size());
  for (size_t i = 0; i < places.size(); ++i) interleaved[(i % 2) * 4 + i / 2] = places[i];
  auto order = composeLikeComm(sys, interleaved, 1).orders[0];
  for (size_t i = 0; i < order.size(); i += 2) EXPECT_EQ(interleaved[order[i]].device, interleaved[order[i + 1]].device);
}

TEST(CommTopo, PlaceRank) {
  System sys = loadFile(dataFile(testing::kPcieBox));
  RankPlace g = placeRank(sys, 0, 2, 0, 0);
  EXPECT_EQ(sys.nodes[g.device].cudaDev, 2);
  RankPlace c1 = placeRank(sys, 0, -1, 1, 0);
  EXPECT_EQ(sys.nodes[c1.device].kind, NodeKind::Cpu);
  EXPECT_EQ(sys.nodes[c1.device].numa, 1);
  // Unknown NUMA node: round-robin over the CPU nodes by local index.
  EXPECT_NE(placeRank(sys, 0, -1, 9, 0).device, placeRank(sys, 0, -1, 9, 1).device);
  EXPECT_EQ(placeRank(sys, 0, -1, 9, 0).device, placeRank(sys, 0, -1, 9, 2).device);
  EXPECT_EQ(sys.nodes[placeRank(sys, 0, 42, 0, 0).device].kind, NodeKind::Cpu);  // no such GPU
}

TEST(CommTopo, ComposeRejectsDisagreeingViews) {
  std::vector<HostRingView> views(2);
  views[0].pos[0] = 0;
  views[1].pos[0] = 0;  // both claim position 0
  EXPECT_THROW(composeRings({0, 0}, views, 1), weft::Error);
  views[1].pos[0] = 1;
  EXPECT_EQ(composeRings({0, 0}, views, 1).orders[0], (std::vector<int>{0, 1}));
  views[0].pos[0] = 1;
  views[1].pos[0] = 0;
  EXPECT_EQ(composeRings({0, 0}, views, 1).orders[0], (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace weft::topo
