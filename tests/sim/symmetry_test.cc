// One rank per symmetry class (src/sim/symmetry.h) gives the full model's
// times: every algorithm, on command-line clusters with rails and on a
// topology file with racks under a spine, sizes that split evenly and sizes
// that do not, with the symmetry on and off (weft-sim --symmetry off). And
// it does reduce the work where the plans allow it (the rings, hier).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "src/sim/flow_model.h"
#include "src/sim/sim_call.h"
#include "src/sim/topo_cluster.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

using Json = nlohmann::json;

sim::RunStats run(const sim::Cluster& c, algo::AlgoId a, plan::Coll coll, uint64_t count, int channels,
                  bool symmetry, sim::SymmetryMemo* memo = nullptr) {
  algo::CollArgs args;
  args.coll = coll;
  args.nranks = int(c.hostOf.size());
  args.count = count;
  args.nChannels = channels;
  args.geometry.slotBytes = 64 << 10;
  args.hostOf = c.hostOf;
  sim::CallOptions o;
  o.useSymmetry = symmetry;
  o.memo = memo;
  o.shape = std::string(algo::algoName(a)) + "/" + plan::collName(coll) + "/" + std::to_string(channels);
  return sim::simulateCall([&](int rank) {
    algo::CollArgs mine = args;
    mine.rank = rank;
    return algo::algoInfo(a).build(mine);
  }, c, o);
}

// `hosts` hosts of `gpus` GPUs on NVSwitch, one 100 Gb/s NIC per GPU on the
// host's PCI root (all equally close: ranks spread over them), two hosts per
// top-of-rack switch, racks joined through a spine at 20 GB/s.
Json railCluster(int hosts, int gpus) {
  Json doc = {{"weft_topology", 1}, {"hosts", Json::array()}};
  Json net = {{"switches", Json::array()}, {"links", Json::array()}};
  net["switches"].push_back({{"id", "spine"}, {"kind", "net_switch"}});
  for (int h = 0; h < hosts; h++) {
    const std::string tor = "tor" + std::to_string(h / 2), name = "h" + std::to_string(h);
    if (h % 2 == 0) {
      net["switches"].push_back({{"id", tor}, {"kind", "net_switch"}});
      net["links"].push_back({{"a", "net/" + tor}, {"b", "net/spine"}, {"kind", "net"}, {"bw", 20.0}});
    }
    Json host = {{"name", name}, {"nodes", Json::array()}, {"links", Json::array()}};
    host["nodes"].push_back({{"id", "cpu0"}, {"kind", "cpu"}, {"numa", 0}});
    host["nodes"].push_back({{"id", "nvs"}, {"kind", "nvswitch"}});
    for (int g = 0; g < gpus; g++) {
      const std::string gpu = "gpu" + std::to_string(g), nic = "nic" + std::to_string(g);
      host["nodes"].push_back({{"id", gpu}, {"kind", "gpu"}, {"cuda_dev", g}, {"sm", 80}, {"numa", 0}});
      host["nodes"].push_back({{"id", nic}, {"kind", "nic"}, {"numa", 0}, {"ib_device", "mlx5_" + std::to_string(g)},
                               {"port", 1}, {"link_layer", "Ethernet"}, {"speed_gbps", 100}, {"up", true}});
      host["links"].push_back({{"a", gpu}, {"b", "nvs"}, {"kind", "nvlink"}, {"bw", 100}});
      host["links"].push_back({{"a", "cpu0"}, {"b", gpu}, {"kind", "pci"}, {"bw", 24}});
      host["links"].push_back({{"a", "cpu0"}, {"b", nic}, {"kind", "pci"}, {"bw", 24}});
      net["links"].push_back({{"a", name + "/" + nic}, {"b", "net/" + tor}, {"kind", "net"}});
    }
    doc["hosts"].push_back(host);
  }
  doc["network"] = net;
  doc["simulation"] = {{"step_us", 1}, {"net_hop_latency_us", 1.5}};
  return doc;
}

void expectSameTimes(const sim::Cluster& c, const char* what, bool expectReduced) {
  const int n = int(c.hostOf.size());
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = c.hosts();
  int ran = 0;
  // Every registered algorithm that runs on the layout (weft-sim's rule).
  for (int i = 0; i < algo::algoCount(); i++)
    for (plan::Coll coll : {plan::Coll::AllReduce, plan::Coll::ReduceScatter, plan::Coll::AllGather})
      for (uint64_t count : {uint64_t(1) << 18, uint64_t(1) << 20 | 13})
        for (int channels : {1, 2}) {
          const algo::AlgoId a = algo::AlgoId(i);
          in.bytes = count * 4;
          if (!algo::algoSupports(a, coll) || !std::isfinite(algo::estimateUs(coll, a, in))) continue;
          ran++;
          const uint64_t perCall = coll == plan::Coll::AllReduce ? count : count / uint64_t(n);
          SCOPED_TRACE(std::string(what) + ": " + algo::algoName(a) + " " + plan::collName(coll) + " count " +
                       std::to_string(perCall) + ", " + std::to_string(channels) + " channel(s)");
          const sim::RunStats on = run(c, a, coll, perCall, channels, true);
          const sim::RunStats off = run(c, a, coll, perCall, channels, false);
          EXPECT_NEAR(on.us, off.us, off.us * 1e-9);
          EXPECT_EQ(on.steps, off.steps);
          EXPECT_EQ(on.netBytes, off.netBytes);
          EXPECT_EQ(off.simulatedRanks, n);
          // An even ring and hier run one rank per class.
          if (expectReduced && (a == algo::kRing || a == algo::kHier) && count % uint64_t(n) == 0)
            EXPECT_LT(on.simulatedRanks, n);
        }
  // ring and hier for the three collectives, the trees for AllReduce.
  EXPECT_GE(ran, 2 * 3 * 2 * 2 + 3 * 2 * 2);
}

TEST(SimSymmetry, RepresentativesGiveTheFullModelsTimesOnRails) {
  sim::SimpleCluster s;
  s.layout.assign(8, 4);
  s.intraGBs = 100;
  s.intraLatUs = 1;
  s.nicGBs = 10;
  s.netLatUs = 5;
  s.nicsPerHost = 4;
  s.stepOverheadUs = 1;
  expectSameTimes(sim::buildCluster(s), "8 x 4, 4 NICs per host", true);
  s.nicsPerHost = 2;  // two ranks per NIC
  expectSameTimes(sim::buildCluster(s), "8 x 4, 2 NICs per host", true);
}

TEST(SimSymmetry, RepresentativesGiveTheFullModelsTimesUnderASpine) {
  const sim::TopoCluster t = sim::topoClusterFromString(railCluster(8, 4).dump());
  expectSameTimes(t.cluster, "8 x 4 in racks of 2", true);
}

TEST(SimSymmetry, UnevenHostsRunInFull) {
  sim::SimpleCluster s;
  s.layout = {4, 4, 2, 4};
  s.nicsPerHost = 2;
  const sim::Cluster c = sim::buildCluster(s);
  const sim::RunStats st = run(c, algo::kHier, plan::Coll::AllReduce, 1 << 16, 1, true);
  EXPECT_EQ(st.simulatedRanks, 14);
  expectSameTimes(c, "4 + 4 + 2 + 4", false);
}

// A sweep that keeps the symmetry checked at its first size (SymmetryMemo)
// gives the full model's times, steps and bytes at every size, for every
// algorithm the memo takes; sizes whose blocks do not split evenly are
// checked again (and run in full).
TEST(SimSymmetry, RememberedSymmetryGivesTheFullModelsTimes) {
  const sim::TopoCluster t = sim::topoClusterFromString(railCluster(8, 4).dump());
  const int n = int(t.cluster.hostOf.size());
  sim::SymmetryMemo memo;
  uint64_t kept = 0;
  for (algo::AlgoId a : {algo::kRing, algo::kHier, *algo::findAlgo("hiertree")})
    for (plan::Coll coll : {plan::Coll::AllReduce, plan::Coll::ReduceScatter, plan::Coll::AllGather})
      for (uint64_t count : {uint64_t(1) << 12, uint64_t(1) << 14, uint64_t(3) << 14, uint64_t(1) << 16,
                             (uint64_t(1) << 16) + 4, uint64_t(1) << 18}) {
        if (!algo::algoSupports(a, coll)) continue;
        SCOPED_TRACE(std::string(algo::algoName(a)) + " " + plan::collName(coll) + " count " + std::to_string(count));
        const uint64_t before = memo.reused;
        const sim::RunStats fast = run(t.cluster, a, coll, count, 2, true, &memo);
        const sim::RunStats full = run(t.cluster, a, coll, count, 2, false);
        EXPECT_NEAR(fast.us, full.us, full.us * 1e-9);
        EXPECT_EQ(fast.steps, full.steps);
        EXPECT_EQ(fast.netBytes, full.netBytes);
        if (memo.reused > before) {
          kept++;
          EXPECT_LT(fast.simulatedRanks, n);
        }
      }
  // The even sizes after the first of each (algorithm, collective) keep it.
  EXPECT_GE(kept, 10u);
}

// The full model over plans made on demand, one at a time, gives what it
// gives over every plan held at once; a source whose plans change between
// its two passes, or that runs past the caller's limit, is refused.
TEST(SimSymmetry, StreamedPlansGiveTheHeldPlansTimes) {
  const sim::TopoCluster t = sim::topoClusterFromString(railCluster(4, 4).dump());
  const int n = int(t.cluster.hostOf.size());
  for (algo::AlgoId a : {algo::kRing, algo::kDoubleTree, algo::kHier})
    for (uint64_t count : {uint64_t(1000), uint64_t(1) << 18}) {
      SCOPED_TRACE(std::string(algo::algoName(a)) + " count " + std::to_string(count));
      algo::CollArgs args;
      args.nranks = n;
      args.count = count;
      args.nChannels = 2;
      args.hostOf = t.cluster.hostOf;
      auto build = [&](int rank) {
        algo::CollArgs mine = args;
        mine.rank = rank;
        return algo::algoInfo(a).build(mine);
      };
      std::vector<plan::Plan> all;
      for (int r = 0; r < n; r++) all.push_back(build(r));
      const sim::RunStats held = sim::simulate(all, t.cluster);
      uint64_t counted = 0;
      const sim::RunStats streamed = sim::simulateStreamed(build, t.cluster, [&](uint64_t s) { counted = s; });
      EXPECT_EQ(streamed.us, held.us);
      EXPECT_EQ(streamed.steps, held.steps);
      EXPECT_EQ(streamed.netBytes, held.netBytes);
      EXPECT_EQ(counted, held.steps);
    }
  int calls = 0;
  auto changing = [&](int rank) {
    algo::CollArgs args;
    args.nranks = n;
    args.rank = rank;
    args.count = 1 << 16;
    args.nChannels = ++calls > n ? 1 : 2;  // the second pass builds other plans
    args.hostOf = t.cluster.hostOf;
    return algo::algoInfo(algo::kDoubleTree).build(args);
  };
  EXPECT_THROW(sim::simulateStreamed(changing, t.cluster, {}), Error);
  calls = 0;
  EXPECT_THROW(sim::simulateStreamed(changing, t.cluster, [](uint64_t s) {
    if (s > 10) throw Error(weftInvalidArgument, "too many steps");
  }), Error);
}

// Scaled plans: every count and offset by one ratio, nothing else.
TEST(SimSymmetry, PlanScalesOnlyByOneRatio) {
  plan::Plan a;
  a.nranks = 2;
  a.channels.resize(1);
  a.channels[0].steps = {plan::send(1, plan::Buf::Send, 0, 4), plan::recv(1, plan::Buf::Recv, 4, 4)};
  plan::Plan b = a;
  for (auto& s : b.channels[0].steps) s.count *= 3, s.srcOff *= 3, s.dstOff *= 3;
  EXPECT_TRUE(sim::planScales(a, b, 3, 1));
  EXPECT_FALSE(sim::planScales(a, b, 2, 1));
  b.channels[0].steps[1].count++;  // one block grew by more than the others
  EXPECT_FALSE(sim::planScales(a, b, 3, 1));
  b = a;
  b.channels[0].steps[0].sendPeer[0] = 0;
  EXPECT_FALSE(sim::planScales(a, b, 1, 1));
  b = a;
  b.sliceBytes = 1024;
  EXPECT_FALSE(sim::planScales(a, b, 1, 1));
}

}  // namespace
}  // namespace weft::test
