#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "algorithms/cost_model.h"
#include "algorithms/one_shot.h"
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

}  // namespace
}  // namespace weft::test
