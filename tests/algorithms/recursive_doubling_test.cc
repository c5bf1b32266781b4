// Recursive doubling's AllReduce plans through the verifier (1..16 ranks,
// powers of two and not, awkward counts, in and out of place), their shape,
// and where the cost model prefers them to the ring. That every rank gets
// the same bits is checked end to end in algorithm_collectives_test.cc.
#include <gtest/gtest.h>

#include "algorithms/recursive_doubling.h"
#include "algorithms/selector.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

TEST(RecursiveDoubling, AllReduceVerified) {
  for (int n = 1; n <= 16; n++)
    for (uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(n + 1), uint64_t(97), uint64_t(1009)})
      for (bool inPlace : {false, true}) {
        algo::CollArgs a;
        a.coll = Coll::AllReduce;
        a.nranks = n;
        a.count = count;
        a.geometry = tinyFifo();
        verify::Result r = verify::verify(problemFor(algo::buildRecursiveDoubling, a, inPlace));
        ASSERT_TRUE(r.ok) << label(a, inPlace) << "\n" << r.text();
      }
}

// Per piece: a send and a receive-reduce per round; a rank past the power
// of two sends and receives once, its partner adds the fold and the return.
TEST(RecursiveDoubling, StepsPerPiece) {
  algo::CollArgs a;
  a.nranks = 4;
  a.count = 100;
  a.nChannels = 4;             // ignored: one channel
  a.geometry.slotBytes = 160;  // 40 four-byte elements: 3 pieces
  const plan::Plan four = algo::buildRecursiveDoubling(a);
  ASSERT_EQ(four.channels.size(), 1u);
  EXPECT_EQ(four.channels[0].steps.size(), 3u * 4u);
  EXPECT_EQ(four.channels[0].steps[0].sendPeer[0], 1);
  EXPECT_EQ(four.channels[0].steps[2].sendPeer[0], 2);
  a.nranks = 5;
  a.rank = 4;
  EXPECT_EQ(algo::buildRecursiveDoubling(a).channels[0].steps.size(), 3u * 2u);
  a.rank = 0;
  EXPECT_EQ(algo::buildRecursiveDoubling(a).channels[0].steps.size(), 3u * 6u);
  a.rank = 1;
  EXPECT_EQ(algo::buildRecursiveDoubling(a).channels[0].steps.size(), 3u * 4u);
}

// Fewer hops win small calls, the ring's fewer bytes win large ones.
TEST(RecursiveDoubling, CostModelPicksItForSmallCallsOnly) {
  const std::optional<algo::AlgoId> id = algo::findAlgo(algo::kRecursiveDoublingName);
  ASSERT_TRUE(id.has_value());
  const algo::AlgoFilter noOneShot = algo::parseAlgoFilter("^oneshot");
  for (int n : {4, 8}) {
    algo::CostInputs in;
    in.nranks = n;
    in.bytes = 8;
    EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, noOneShot), *id) << n;
    in.bytes = 64ull << 20;
    EXPECT_NE(algo::selectAlgo(Coll::AllReduce, in, noOneShot), *id) << n;
  }
  // Where measured over loopback TCP (4 processes): doubling up to 32 KB,
  // the ring from 64 KB.
  algo::CostInputs four;
  four.nranks = 4;
  four.intra = {3.0, 8.0};  // WEFT_TUNE_SHM_LAT_NS, WEFT_TUNE_SHM_BW_MBS defaults
  four.bytes = 16 << 10;
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, four, noOneShot), *id);
  four.bytes = 128 << 10;
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, four, noOneShot), algo::kRing);
  EXPECT_FALSE(algo::algoSupports(*id, Coll::AllGather));
}

}  // namespace
}  // namespace weft::test
