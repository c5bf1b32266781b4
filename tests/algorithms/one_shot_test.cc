// The one-shot algorithm's plans (the ll protocol's data flow) through the
// verifier: every collective it declares, 1..16 ranks, awkward counts, every
// root, in and out of place; and the plans' shape (one channel, one round
// per piece). The sweep (verifier_sweep_test.cc) takes 17..128 ranks.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/one_shot.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

const Coll kColls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce};

TEST(OneShot, EveryCollectiveVerified) {
  for (Coll c : kColls)
    for (int n = 1; n <= 16; n++)
      for (uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(n + 1), uint64_t(97), uint64_t(1009)})
        for (int root : {0, n / 2, n - 1})  // roots matter to Broadcast and Reduce only
          if (root == 0 || c == Coll::Broadcast || c == Coll::Reduce)
          for (bool inPlace : {false, true}) {
            algo::CollArgs a;
            a.coll = c;
            a.nranks = n;
            a.count = count;
            a.root = root;
            a.geometry = tinyFifo();
            verify::Result r = verify::verify(problemFor(algo::buildOneShot, a, inPlace));
            ASSERT_TRUE(r.ok) << label(a, inPlace) << "\n" << r.text();
          }
}

TEST(OneShot, OneChannelOneRoundPerPiece) {
  algo::CollArgs a;
  a.nranks = 4;
  a.rank = 1;
  a.count = 100;
  a.nChannels = 4;  // ignored: one channel
  a.geometry.slotBytes = 160;  // 40 four-byte elements: 3 rounds
  const plan::Plan p = algo::buildOneShot(a);
  ASSERT_EQ(p.channels.size(), 1u);
  // Per round: 3 sends, the own copy, 3 receive-reduces.
  EXPECT_EQ(p.channels[0].steps.size(), 3u * 7u);
  EXPECT_EQ(algo::algoName(*algo::oneShotId()), std::string("oneshot"));
}

TEST(OneShot, InfiniteAcrossHosts) {
  algo::CostInputs in;
  in.nranks = 8;
  in.nHosts = 2;
  in.bytes = 8;
  EXPECT_TRUE(std::isinf(algo::estimateUs(Coll::AllReduce, *algo::oneShotId(), in)));
  in.nHosts = 1;
  EXPECT_FALSE(std::isinf(algo::estimateUs(Coll::AllReduce, *algo::oneShotId(), in)));
}

}  // namespace
}  // namespace weft::test
