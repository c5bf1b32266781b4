// The single-copy plans (algorithms/direct.h) through the verifier: AllReduce,
// ReduceScatter and AllGather, 1..12 ranks, awkward counts, in and out of
// place, chunks of a few elements; and the verifier catching a broken one (a
// copy left out, a barrier left out on one rank).
#include <gtest/gtest.h>

#include "algorithms/direct.h"
#include "src/util/error.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

algo::CollArgs args(Coll c, int n, uint64_t count) {
  algo::CollArgs a;
  a.coll = c;
  a.nranks = n;
  a.count = count;
  a.geometry = tinyFifo();  // 16-element chunks
  return a;
}

TEST(Direct, EveryCollectiveVerified) {
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather})
    for (int n = 1; n <= 12; n++)
      for (uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(n + 1), uint64_t(97), uint64_t(1009)})
        for (bool inPlace : {false, true}) {
          algo::CollArgs a = args(c, n, count);
          verify::Result r = verify::verify(problemFor(algo::buildDirect, a, inPlace));
          ASSERT_TRUE(r.ok) << label(a, inPlace) << "\n" << r.text();
        }
}

TEST(Direct, OneChannelBetweenTwoBarriersNoFifo) {
  algo::CollArgs a = args(Coll::AllReduce, 3, 1000);
  a.rank = 1;
  plan::Plan p = algo::buildDirect(a);
  ASSERT_EQ(p.channels.size(), 1u);
  const auto& s = p.channels[0].steps;
  ASSERT_GE(s.size(), 3u);
  EXPECT_EQ(s.front().kind, plan::StepKind::Barrier);
  EXPECT_EQ(s.back().kind, plan::StepKind::Barrier);
  for (size_t i = 1; i + 1 < s.size(); i++) {
    EXPECT_EQ(s[i].kind, plan::StepKind::Direct) << plan::describe(s[i]);
    EXPECT_EQ(s[i].nRecv + s[i].nSend, 0);
    EXPECT_LE(s[i].count, 16u);
  }
}

TEST(Direct, UnsupportedCollectiveIsAnError) {
  EXPECT_FALSE(algo::directSupports(Coll::Broadcast));
  EXPECT_THROW(algo::buildDirect(args(Coll::Broadcast, 2, 10)), Error);
}

TEST(Direct, VerifierCatchesAMissingCopy) {
  algo::CollArgs a = args(Coll::AllReduce, 3, 100);
  verify::Problem p = problemFor(algo::buildDirect, a, false);
  auto& steps = p.plans[2].channels[0].steps;
  for (size_t i = 0; i < steps.size(); i++)
    if (steps[i].kind == plan::StepKind::Direct && steps[i].dstRank != 2) {  // a copy to a peer
      steps.erase(steps.begin() + long(i));
      break;
    }
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(verify::IssueKind::Uninitialised) || r.has(verify::IssueKind::WrongContent)) << r.text();
}

TEST(Direct, VerifierCatchesAMissingBarrier) {
  algo::CollArgs a = args(Coll::AllGather, 3, 40);
  verify::Problem p = problemFor(algo::buildDirect, a, false);
  p.plans[1].channels[0].steps.pop_back();  // rank 1 never reaches the closing barrier
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(verify::IssueKind::Deadlock)) << r.text();
}

TEST(Direct, VerifierCatchesAReductionTwice) {
  algo::CollArgs a = args(Coll::ReduceScatter, 2, 20);
  verify::Problem p = problemFor(algo::buildDirect, a, false);
  auto& steps = p.plans[0].channels[0].steps;
  for (size_t i = 0; i < steps.size(); i++)
    if (steps[i].kind == plan::StepKind::Direct) {
      plan::Step again = steps[i];
      again.srcRank[0] = -1;  // accumulate the peer's input a second time
      steps.insert(steps.begin() + long(i) + 1, again);
      break;
    }
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(verify::IssueKind::WrongContent)) << r.text();
}

}  // namespace
}  // namespace weft::test
