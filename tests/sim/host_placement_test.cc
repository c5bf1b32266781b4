// The cost model's view of where ranks sit (CostInputs::hostRuns): filled
// from each rank's host as the communicator, weft-sim and weft-select do,
// read back per rank, and used by the binary tree, which runs over rank
// numbers, to price the hops its edges really take.
#include <gtest/gtest.h>

#include "algorithms/cost_model.h"
#include "algorithms/selector.h"

namespace weft::test {
namespace {

using plan::Coll;

TEST(HostPlacement, RunsFollowRankOrder) {
  algo::CostInputs in;
  in.nranks = 6, in.nHosts = 2;
  algo::setHostPlacement(in, {0, 0, 1, 1, 1, 0});  // host 0's ranks are not consecutive
  EXPECT_EQ(in.hostRanksMin, 3);
  EXPECT_EQ(in.hostRanksMax, 3);
  ASSERT_EQ(in.nHostRuns, 3);
  EXPECT_EQ(in.hostRuns[0], 2);
  EXPECT_EQ(in.hostRuns[2], 1);
  EXPECT_EQ(algo::hostOfRanks(in), (std::vector<int>{0, 0, 1, 1, 1, 0}));
}

TEST(HostPlacement, TooManyRunsOrAWrongSumFallBackToEvenBlocks) {
  algo::CostInputs in;
  in.nranks = 2 * (algo::kMaxHostRuns + 1), in.nHosts = 2;
  std::vector<int> alternating(size_t(in.nranks));
  for (int r = 0; r < in.nranks; r++) alternating[size_t(r)] = r % 2;
  algo::setHostPlacement(in, alternating);
  EXPECT_EQ(in.nHostRuns, 0);
  const std::vector<int> even = algo::hostOfRanks(in);
  EXPECT_EQ(even.front(), 0);
  EXPECT_EQ(even.back(), 1);
  EXPECT_EQ(even[size_t(in.nranks / 2)], 1);
  // A list that does not describe nranks ranks (a peer's bytes, a stale
  // copy) is not read.
  in.nranks = 4;
  in.nHostRuns = 2, in.hostRuns[0] = 3, in.hostRuns[1] = 3, in.hostRunHost[1] = 1;
  EXPECT_EQ(algo::hostOfRanks(in), (std::vector<int>{0, 0, 1, 1}));
}

// 3 + 1 ranks: the binary tree (0 <- 2 <- {1, 3}) crosses the network on
// one edge, so its deepest leaf is one intra and one network hop from the
// root. Priced as hosts of ceil(4/2) = 2 ranks it took two network hops
// and lost to the double tree at small sizes, which weft-sim runs 17%
// slower (8 B: binary tree 12.0 us, double tree 14.0).
TEST(HostPlacement, BinaryTreePricesTheHopsItsEdgesTake) {
  algo::CostInputs in;
  in.nranks = 4, in.nHosts = 2, in.bytes = 8;
  in.intra = {1, 100};
  in.inter = {5, 12.5};
  algo::setHostPlacement(in, {0, 0, 0, 1});
  EXPECT_DOUBLE_EQ(algo::latencyTermUs(Coll::AllReduce, algo::kBinaryTree, in), 2 * (1 + 5));
  const algo::AlgoFilter all = algo::parseAlgoFilter("^oneshot");
  EXPECT_EQ(algo::selectCall(Coll::AllReduce, in, all, {}).algo, algo::kBinaryTree);
  // 1 + 3: rank 0 alone, its one edge (to rank 2) the crossing one.
  algo::setHostPlacement(in, {0, 1, 1, 1});
  EXPECT_DOUBLE_EQ(algo::latencyTermUs(Coll::AllReduce, algo::kBinaryTree, in), 2 * (1 + 5));
  // 2 + 2: ranks 1 -> 2 -> 0 cross twice.
  algo::setHostPlacement(in, {0, 0, 1, 1});
  EXPECT_DOUBLE_EQ(algo::latencyTermUs(Coll::AllReduce, algo::kBinaryTree, in), 2 * (5 + 5));
}

}  // namespace
}  // namespace weft::test
