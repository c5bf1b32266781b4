#include <gtest/gtest.h>


#include "algorithms/ring.h"
#include "src/util/error.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

const Coll kRingColls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce};

// Counts that stress the splits: empty, less than one per rank, around n,
// primes, and sizes divisible by neither n nor the piece size.
std::vector<uint64_t> awkwardCounts(int n) {
  std::vector<uint64_t> c = {0, 1, uint64_t(n) + 1, 97, 1009};
  if (n > 1) c.push_back(uint64_t(n) - 1);
  c.push_back(uint64_t(n));
  return c;
}

// At many ranks: counts that leave some blocks empty and counts that span
// several loops; ReduceScatter/AllGather counts are per rank, so smaller.
std::vector<uint64_t> spreadCounts(int n, Coll c) {
  if (c == Coll::ReduceScatter || c == Coll::AllGather) return {1, 53};
  return {uint64_t(n) - 1, uint64_t(n) + 1, 1009};
}

void expectVerified(const algo::CollArgs& a, bool inPlace) {
  verify::Result r = verify::verify(problemFor(algo::buildRing, a, inPlace));
  ASSERT_TRUE(r.ok) << label(a, inPlace) << "\n" << r.text();
}

void sweep(const std::vector<int>& ranks, const std::vector<int>& channels, bool awkward) {
  for (int n : ranks)
    for (Coll c : kRingColls)
      for (uint64_t count : awkward ? awkwardCounts(n) : spreadCounts(n, c))
        for (int ch : channels)
          for (bool inPlace : {false, true}) {
            algo::CollArgs a;
            a.coll = c;
            a.nranks = n;
            a.count = count;
            a.nChannels = ch;
            a.root = n > 1 ? (n * 2) / 3 : 0;  // not rank 0: the chain must wrap
            a.geometry = tinyFifo();
            expectVerified(a, inPlace);
            if (::testing::Test::HasFatalFailure()) return;
          }
}

TEST(Ring, EveryCollectiveUpTo16Ranks) {
  std::vector<int> ranks;
  for (int n = 1; n <= 16; n++) ranks.push_back(n);
  sweep(ranks, {1, 2, 4}, true);
}

TEST(Ring, SpreadUpTo128Ranks) { sweep({24, 37, 64, 128}, {1, 2}, false); }

TEST(Ring, LargeCountsWithDefaultSlots) {
  // A few million elements, not divisible by n or by the piece size.
  for (int n : {2, 3, 8})
    for (Coll c : kRingColls) {
      algo::CollArgs a;
      a.coll = c;
      a.nranks = n;
      a.count = 3'000'017;
      a.nChannels = 2;
      a.root = n - 1;
      expectVerified(a, c == Coll::AllGather || c == Coll::ReduceScatter);
      if (HasFatalFailure()) return;
    }
}

TEST(Ring, CustomOrderAndRoot) {
  algo::CollArgs a;
  a.nranks = 6;
  a.order = {3, 0, 5, 1, 4, 2};
  a.geometry = tinyFifo();
  a.count = 523;
  a.nChannels = 2;
  for (Coll c : kRingColls)
    for (int root : {0, 3, 5}) {
      a.coll = c;
      a.root = root;
      expectVerified(a, true);
      expectVerified(a, false);
    }
}

TEST(Ring, PerChannelOrders) {
  // Channels follow different rings (as topology gives them to spread
  // traffic over NICs); every collective must still verify.
  algo::CollArgs a;
  a.nranks = 6;
  a.channelOrders = {{0, 1, 2, 3, 4, 5}, {5, 3, 1, 0, 2, 4}, {2, 0, 4, 1, 5, 3}};
  a.geometry = tinyFifo();
  a.count = 611;
  a.nChannels = 3;
  for (Coll c : kRingColls)
    for (int root : {0, 4}) {
      a.coll = c;
      a.root = root;
      expectVerified(a, true);
      expectVerified(a, false);
    }
  a.channelOrders.push_back({0, 1, 2});
  EXPECT_THROW(algo::buildRing(a), Error);
}

TEST(Ring, AllReduceUsesHalfFifoChunksAndFusedSteps) {
  algo::CollArgs a;
  a.nranks = 4;
  a.rank = 1;
  a.geometry = tinyFifo();  // pieces of 16, chunks of 32 elements
  a.count = 4 * 32 * 3;     // three full loops
  plan::Plan p = algo::buildRing(a);
  ASSERT_EQ(p.channels.size(), 1u);
  const auto& steps = p.channels[0].steps;
  ASSERT_EQ(steps.size(), 3u * (2 * 4 - 1));
  for (const auto& s : steps) EXPECT_LE(s.count, 32u);
  // Per loop: send, n-2 recvReduceSend, recvReduceCopySend (pre+post), ...
  EXPECT_EQ(steps[0].nRecv, 0);
  EXPECT_EQ(steps[0].flags, plan::kPreOp);
  EXPECT_EQ(steps[1].nRecv, 1);
  EXPECT_EQ(steps[1].nSend, 1);
  EXPECT_EQ(steps[1].dst, plan::Buf::None);
  EXPECT_EQ(steps[3].flags, plan::kPreOp | plan::kPostOp);
  EXPECT_EQ(steps[3].dst, plan::Buf::Recv);
  EXPECT_EQ(steps[3].nSend, 1);
  EXPECT_EQ(steps[6].nSend, 0);
}

TEST(Ring, RejectsBadArguments) {
  algo::CollArgs a;
  a.nranks = 4;
  a.count = 10;
  a.rank = 4;
  EXPECT_THROW(algo::buildRing(a), Error);
  a.rank = 0;
  a.order = {0, 1, 1, 2};
  EXPECT_THROW(algo::buildRing(a), Error);
  a.order.clear();
  a.coll = plan::Coll::AllToAll;
  EXPECT_THROW(algo::buildRing(a), Error);
}

TEST(Ring, EmptyCountIsEmptyPlan) {
  algo::CollArgs a;
  a.nranks = 5;
  a.count = 0;
  EXPECT_EQ(algo::buildRing(a).stepCount(), 0u);
}

}  // namespace
}  // namespace weft::test
