#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "algorithms/cost_model.h"
#include "algorithms/one_shot.h"
#include "algorithms/protocols.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

using algo::AlgoId;
using plan::Coll;

algo::CostInputs inputs(int n, int hosts, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = hosts;
  in.bytes = bytes;
  in.intra = {0.5, 20.0};
  in.inter = {5.0, 12.5};
  return in;
}

TEST(CostModel, RingFormula) {
  algo::CostInputs in = inputs(4, 1, 1000000);
  // 2(n-1) hops of 0.5 µs plus 2(n-1)/n of 1 MB at 20 GB/s (= 20000 B/µs).
  EXPECT_NEAR(algo::estimateUs(Coll::AllReduce, algo::kRing, in), 6 * 0.5 + 1.5 * 1e6 / 2e4, 1e-9);
  EXPECT_NEAR(algo::estimateUs(Coll::AllGather, algo::kRing, in), 3 * 0.5 + 0.75 * 1e6 / 2e4, 1e-9);
  EXPECT_TRUE(std::isinf(algo::estimateUs(Coll::AllGather, algo::kDoubleTree, in)));
}

TEST(CostModel, TimeGrowsWithBytesAndRanks) {
  for (int a = 0; a < algo::algoCount(); a++) {
    // One-host algorithms (oneshot, doubling) are infinite on these four.
    if (algo::isOneShot(AlgoId(a)) || !algo::algoApplies(AlgoId(a), Coll::AllReduce, inputs(16, 4, 1 << 10)))
      continue;
    double small = algo::estimateUs(Coll::AllReduce, AlgoId(a), inputs(16, 4, 1 << 10));
    double big = algo::estimateUs(Coll::AllReduce, AlgoId(a), inputs(16, 4, 1 << 26));
    EXPECT_LT(small, big) << algo::algoName(AlgoId(a));
  }
  EXPECT_LT(algo::estimateUs(Coll::AllReduce, algo::kRing, inputs(8, 8, 4096)),
            algo::estimateUs(Coll::AllReduce, algo::kRing, inputs(64, 64, 4096)));
}

TEST(Selector, TreeForSmallAtScaleRingForLargeOnOneHost) {
  algo::AlgoFilter all;
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, inputs(128, 128, 8), all), algo::kDoubleTree);
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, inputs(8, 1, 1ull << 30), all), algo::kRing);
  EXPECT_EQ(algo::selectAlgo(Coll::AllGather, inputs(128, 128, 8), all), algo::kRing);
}

TEST(Selector, ParsesWeftAlgo) {
  algo::AlgoFilter f = algo::parseAlgoFilter("ring");
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, inputs(128, 128, 8), f), algo::kRing);

  f = algo::parseAlgoFilter("^ring");
  EXPECT_NE(algo::selectAlgo(Coll::AllReduce, inputs(8, 1, 1ull << 30), f), algo::kRing);
  // The ring and hier implement AllGather across hosts: "^ring" leaves hier.
  // Only the ring implements Broadcast and Reduce there: the general list
  // does not apply to them (the communicator logs that), and a
  // per-collective entry that leaves nothing is still an error. (Two hosts:
  // on one, the one-shot algorithm would win these small calls.)
  EXPECT_EQ(algo::selectAlgo(Coll::AllGather, inputs(8, 2, 1024), f), algo::kHier);
  EXPECT_EQ(algo::selectAlgo(Coll::Broadcast, inputs(8, 2, 1024), f), algo::kRing);
  EXPECT_EQ(algo::ignoredCollectives(f), "Broadcast, Reduce");
  // oneshot alone runs only on one host: a general list of it applies to none.
  EXPECT_EQ(algo::ignoredCollectives(algo::parseAlgoFilter("oneshot")),
            "AllReduce, ReduceScatter, AllGather, Broadcast, Reduce");
  EXPECT_TRUE(algo::ignoredCollectives(algo::parseAlgoFilter("ring")).empty());
  EXPECT_TRUE(algo::ignoredCollectives(algo::parseAlgoFilter("tree,ring")).empty());
  f = algo::parseAlgoFilter("tree; allgather:binarytree");
  EXPECT_THROW(algo::selectAlgo(Coll::AllGather, inputs(8, 2, 1024), f), Error);
  EXPECT_EQ(algo::selectAlgo(Coll::Broadcast, inputs(8, 2, 1024), f), algo::kRing);
  EXPECT_EQ(algo::ignoredCollectives(f), "ReduceScatter, Broadcast, Reduce");

  f = algo::parseAlgoFilter("ring; allreduce:tree");
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, inputs(8, 1, 1ull << 30), f), algo::kDoubleTree);
  EXPECT_EQ(algo::selectAlgo(Coll::Broadcast, inputs(8, 2, 1024), f), algo::kRing);

  f = algo::parseAlgoFilter("AllReduce:^tree,binarytree");
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, inputs(128, 128, 8), f), algo::kRing);

  EXPECT_THROW(algo::parseAlgoFilter("rings"), Error);
  EXPECT_THROW(algo::parseAlgoFilter("allreduse:ring"), Error);
  EXPECT_NO_THROW(algo::parseAlgoFilter(""));
}

// An algorithm whose entry says it does not apply to a layout costs
// infinity there: the selector skips it unless WEFT_ALGO leaves nothing
// else. hiertree applies on several hosts with several ranks on a host.
TEST(Selector, SkipsAlgorithmsThatDoNotApplyToTheLayout) {
  const std::optional<algo::AlgoId> hierTree = algo::findAlgo("hiertree");
  ASSERT_TRUE(hierTree.has_value());
  auto layout = [](int hosts, int perHost, uint64_t bytes) {
    algo::CostInputs in;
    in.nranks = hosts * perHost;
    in.nHosts = hosts;
    in.nicsPerHost = perHost;
    in.bytes = bytes;
    in.intra = {1, 100};
    in.inter = {5, 12.5};
    return in;
  };
  const algo::AlgoFilter all{};
  for (auto [hosts, perHost] : {std::pair{1, 8}, std::pair{8, 1}}) {
    for (uint64_t bytes : {uint64_t(8), uint64_t(1) << 16, uint64_t(1) << 30}) {
      const algo::CostInputs in = layout(hosts, perHost, bytes);
      EXPECT_FALSE(algo::algoApplies(*hierTree, plan::Coll::AllReduce, in));
      EXPECT_TRUE(std::isinf(algo::estimateUs(plan::Coll::AllReduce, *hierTree, in)));
      EXPECT_NE(algo::selectCall(plan::Coll::AllReduce, in, all, {}).algo, *hierTree) << hosts << "x" << perHost;
    }
    // Asked for by name, it still runs (its plans are correct everywhere).
    EXPECT_EQ(algo::selectCall(plan::Coll::AllReduce, layout(hosts, perHost, 8), algo::parseAlgoFilter("hiertree"), {})
                  .algo, *hierTree);
  }
  // 64 hosts of 8 with a NIC per rail: the rail trees' depth beats the rail
  // rings' 63 hops and their bytes spread over 8 NICs beat the double tree's.
  bool picked = false;
  for (uint64_t bytes = 8; bytes <= (uint64_t(1) << 30); bytes *= 4) {
    const algo::CostInputs in = layout(64, 8, bytes);
    EXPECT_TRUE(std::isfinite(algo::estimateUs(plan::Coll::AllReduce, *hierTree, in)));
    picked |= algo::selectCall(plan::Coll::AllReduce, in, all, {}).algo == *hierTree;
  }
  EXPECT_TRUE(picked);
  EXPECT_FALSE(algo::algoSupports(*hierTree, plan::Coll::AllGather));
}

// The 64 x 8 A100 cluster over RoCE as weft-sim summarises it
// (tools/weft-sim/clusters/a100-64x8-roce.json): NVLink inside a host, one
// 40 Gb/s NIC per GPU, 4.5 us across the network.
algo::CostInputs roce64x8(uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = 512;
  in.nHosts = 64;
  in.nicsPerHost = 8;
  in.bytes = bytes;
  in.intra = {0.6, 240};
  in.inter = {4.5, 5};
  return in;
}

// The selector ranks by the time of the shape the call would run with:
// hiertree's rail trees are 12 network hops deep, and with the slices its
// shape can use they take longer to fill than hier's rail rings take at
// 8 MB (simulated 1190 us against 728), though the model without the
// pipeline (its depth paid once) put hiertree first.
TEST(Selector, RanksByTheShapedCallNotTheUnpipelinedModel) {
  const std::optional<algo::AlgoId> hierTree = algo::findAlgo("hiertree");
  ASSERT_TRUE(hierTree.has_value());
  const algo::CostInputs in = roce64x8(8 << 20);
  const plan::FifoGeometry g;
  EXPECT_LT(algo::estimateUs(Coll::AllReduce, *hierTree, in), algo::estimateUs(Coll::AllReduce, algo::kHier, in));
  const algo::CallChoice c = algo::selectCall(Coll::AllReduce, in, algo::AlgoFilter{}, g);
  EXPECT_EQ(c.algo, algo::kHier);
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, algo::AlgoFilter{}), algo::kHier);
  // Small calls stay on the trees' logarithmic latency (weft-sim has the
  // single binary tree fastest at 8 B there: its lowest levels stay in a
  // host where the double tree's chains run through all eight ranks).
  const algo::AlgoId small = algo::selectCall(Coll::AllReduce, roce64x8(8), algo::AlgoFilter{}, g).algo;
  EXPECT_TRUE(small == *hierTree || small == algo::kDoubleTree || small == algo::kBinaryTree) << algo::algoName(small);
}

// Whatever the layout and size, an algorithm ranked by its shape (one
// with a pipelineShare: the hierarchical tree) wins only with its fill
// counted: its shaped time is no more than every other applicable
// algorithm's estimate, the measure they are ranked by.
TEST(Selector, AShapeRankedChoiceBeatsTheOthersWithItsFill) {
  const plan::FifoGeometry g;
  const algo::AlgoFilter noOneShot = algo::parseAlgoFilter("^oneshot");
  int shapeRankedPicks = 0;
  for (auto [n, hosts] : {std::pair{512, 64}, std::pair{16, 4}, std::pair{8, 1}, std::pair{64, 64}, std::pair{12, 2}})
    for (uint64_t bytes = 8; bytes <= (uint64_t(1) << 30); bytes *= 8)
      for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast}) {
        algo::CostInputs in = roce64x8(bytes);
        in.nranks = n, in.nHosts = hosts, in.nicsPerHost = std::max(1, n / hosts);
        const algo::CallChoice pick = algo::selectCall(c, in, noOneShot, g);
        if (!algo::algoInfo(pick.algo).pipelineShare) continue;
        shapeRankedPicks++;
        for (int a = 0; a < algo::algoCount(); a++) {
          const AlgoId id = AlgoId(a);
          if (id == pick.algo || algo::isOneShot(id) || !algo::algoApplies(id, c, in)) continue;
          EXPECT_LE(pick.shape.us, algo::estimateUs(c, id, in))
              << plan::collName(c) << " " << bytes << " B on " << n << "/" << hosts << ": " << algo::algoName(pick.algo)
              << " over " << algo::algoName(id);
        }
      }
  EXPECT_GT(shapeRankedPicks, 0);
}

// A measured curve still decides where it matches the communicator: a
// curve that makes hier slow at 8 MB hands the call back to hiertree.
TEST(Selector, MeasuredCurvesStillWin) {
  const std::optional<algo::AlgoId> hierTree = algo::findAlgo("hiertree");
  ASSERT_TRUE(hierTree.has_value());
  algo::CostInputs in = roce64x8(8 << 20);
  in.measuredRanks = in.nranks;
  in.measuredHosts = in.nHosts;
  for (double b : {1e6, 1e7}) {
    in.calibration(algo::kHier).measured.add(b, 1e5);
    in.calibration(*hierTree).measured.add(b, 1e3);
  }
  EXPECT_EQ(algo::selectCall(Coll::AllReduce, in, algo::AlgoFilter{}, {}).algo, *hierTree);
}

// Uneven hosts: on 3 + 1 ranks the lone rank holds all three rails and
// runs their reduce-scatter steps one after another through its one NIC;
// weft-sim has the ring 17% ahead for a 1 MB ReduceScatter (73 us against
// 87), where the even model (2 + 2) put hier first. AllGather's rail steps
// forward what a rank has, so the even terms stay for it.
TEST(Selector, UnevenHostsPriceTheSerialRails) {
  algo::CostInputs in;
  in.nranks = 4;
  in.nHosts = 2;
  in.bytes = 1 << 20;
  in.intra = {1, 100};
  in.inter = {5, 12.5};
  const algo::AlgoFilter all = algo::parseAlgoFilter("^oneshot");
  EXPECT_EQ(algo::selectCall(Coll::ReduceScatter, in, all, {}).algo, algo::kHier);  // even: 2 + 2
  const double even = algo::estimateUs(Coll::ReduceScatter, algo::kHier, in);
  in.hostRanksMin = 1;
  in.hostRanksMax = 3;
  EXPECT_GT(algo::estimateUs(Coll::ReduceScatter, algo::kHier, in), even);
  EXPECT_EQ(algo::selectCall(Coll::ReduceScatter, in, all, {}).algo, algo::kRing);
  EXPECT_NE(algo::selectCall(Coll::AllReduce, in, all, {}).algo, algo::kHier);
  // hier's AllGather sends its rails together, but the lone rank's host
  // still receives the other three blocks, as much as the ring carries
  // (weft-sim --layout 3,1 --coll allgather, 1 MB: ring 72.9 us, hier 77.4).
  EXPECT_EQ(algo::selectCall(Coll::AllGather, in, all, {}).algo, algo::kRing);
  EXPECT_GT(algo::estimateUs(Coll::AllGather, algo::kHier, in), algo::estimateUs(Coll::AllGather, algo::kRing, in));
  // The same numbers on even hosts change nothing.
  in.hostRanksMin = in.hostRanksMax = 2;
  EXPECT_DOUBLE_EQ(algo::estimateUs(Coll::ReduceScatter, algo::kHier, in), even);
}

// selectCall skips the shape search of pairs whose bound cannot win; the
// choice must be the one of ranking every pair in full (algorithm, then
// protocol order on ties), on one host (ll, oneshot) and across hosts,
// with several channels, and with measured curves for some algorithms.
TEST(Selector, SkippingShapesKeepsTheFullRanking) {
  const plan::FifoGeometry g;
  for (auto [n, hosts] : {std::pair{2, 1}, std::pair{8, 1}, std::pair{2, 2}, std::pair{16, 4}, std::pair{512, 64}})
    for (int channels : {1, 4})
      for (bool curves : {false, true})
        for (uint64_t bytes = 8; bytes <= (uint64_t(1) << 30); bytes *= 4)
          for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast}) {
            algo::CostInputs in = roce64x8(bytes);
            in.nranks = n, in.nHosts = hosts, in.nicsPerHost = std::max(1, n / hosts);
            in.maxChannels = channels, in.channelBwGBs = 2;
            if (curves) {
              in.measuredRanks = n, in.measuredHosts = hosts;
              in.calibration(algo::kRing).measured.add(1e3, 50), in.calibration(algo::kRing).measured.add(1e7, 900);
            }
            double best = 0;
            int bestA = -1, bestP = -1;
            for (int a = 0; a < algo::algoCount(); a++)
              for (int p = 0; p < algo::protoCount(); p++) {
                const AlgoId id = AlgoId(a);
                const algo::ProtoId proto = algo::ProtoId(p);
                if (!algo::algoSupports(id, c) || !algo::protoSupports(proto, c, id)) continue;
                const algo::ProtoInfo& info = algo::protoInfo(proto);
                if (info.carries && !info.carries(c, id, in)) continue;
                double t = algo::protoEstimateUs(c, id, proto, in);
                if (n > 1 && !algo::isOneShot(id) && algo::algoInfo(id).pipelineShare && !algo::usesMeasuredCurve(c, id, in)) {
                  const double shaped = algo::algoApplies(id, c, in) ? algo::shapeCall(c, id, in, g).us : INFINITY;
                  t = info.adjustUs ? info.adjustUs(c, id, in, shaped) : shaped;
                }
                if (bestA < 0 || t < best) best = t, bestA = a, bestP = p;
              }
            const algo::CallChoice pick = algo::selectCall(c, in, algo::AlgoFilter{}, g);
            EXPECT_EQ(algo::index(pick.algo), bestA) << plan::collName(c) << " " << bytes << " B, " << n << "/" << hosts
                                                      << " ch " << channels << " curves " << curves;
            EXPECT_EQ(algo::index(pick.proto), bestP) << plan::collName(c) << " " << bytes;
            EXPECT_EQ(pick.shape.sliceBytes, algo::shapeCall(c, pick.algo, in, g).sliceBytes);
          }
}

}  // namespace
}  // namespace weft::test
