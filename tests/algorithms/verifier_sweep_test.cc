// Every algorithm x collective it declares x every rank count from 17 to
// 128 (1..16 are swept with more counts in ring_test/tree_test/one_shot_test) x awkward
// counts x channels {1, 2, 4}, in and out of place, through the symbolic
// verifier. One test per rank count, so ctest spreads them over cores; the
// counts outside the CI sample are labelled `long`.
#include <gtest/gtest.h>

#include "algorithms/one_shot.h"
#include "algorithms/registry.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using algo::AlgoId;
using plan::Coll;

// Counts around n, a prime, and a size divisible by neither n nor the
// slice (64 elements); ReduceScatter/AllGather counts are per rank.
std::vector<uint64_t> countsFor(int n, Coll c) {
  const uint64_t un = uint64_t(n);
  if (c == Coll::ReduceScatter || c == Coll::AllGather) return {0, 1, 13, un - 1, un + 1};
  return {0, 1, un - 1, un, un + 1, 1009, 4099};
}

class EveryRankCount : public ::testing::TestWithParam<int> {};

TEST_P(EveryRankCount, EveryAlgorithmAndCollectiveVerifies) {
  const int n = GetParam();
  plan::FifoGeometry g;
  g.slotBytes = 256;  // 64 four-byte elements: larger counts span many pieces and loops
  g.nSlots = 4;
  const Coll colls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce};
  for (int i = 0; i < algo::algoCount(); i++)
    for (int hosts : {1, 4}) {
      const AlgoId a = AlgoId(i);
      // Hosts shape the double tree here; the hierarchical algorithm has a
      // sweep of its own over host layouts (hierarchical_test.cc).
      if (a == algo::kHier || (a != algo::kDoubleTree && hosts != 1)) continue;
      const Builder build = algo::algoInfo(a).build;
      std::vector<int> hostOf(n);
      for (int r = 0; r < n; r++) hostOf[r] = r * hosts / n;  // contiguous ranks per host
      // The one-shot plan is one channel whatever nChannels says, and costs
      // n steps per piece per rank: one channel count, counts up to n + 1
      // (larger ones, many rounds, are in one_shot_test for 1..16 ranks).
      const bool oneShot = algo::isOneShot(a);
      const std::vector<int> channels = oneShot ? std::vector<int>{1} : std::vector<int>{1, 2, 4};
      for (Coll c : colls) {
        if (!algo::algoSupports(a, c)) continue;
        for (uint64_t count : countsFor(n, c))
          for (int ch : channels)
            for (bool inPlace : {false, true}) {
              if (oneShot && count > uint64_t(n) + 1) continue;
              algo::CollArgs args;
              args.coll = c;
              args.nranks = n;
              args.count = count;
              args.nChannels = ch;
              args.root = (n * 2) / 3;
              args.geometry = g;
              args.hostOf = hostOf;
              verify::Result r = verify::verify(problemFor(build, args, inPlace));
              ASSERT_TRUE(r.ok) << algo::algoName(a) << " hosts=" << hosts << " " << label(args, inPlace) << "\n"
                                << r.text();
            }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks17To128, EveryRankCount, ::testing::ValuesIn(sweepRanks(17, 128, true)));
// Labelled `long` (tests/algorithms/CMakeLists.txt): not in the CI run.
INSTANTIATE_TEST_SUITE_P(Ranks17To128Rest, EveryRankCount, ::testing::ValuesIn(sweepRanks(17, 128, false)));

}  // namespace
}  // namespace weft::test
