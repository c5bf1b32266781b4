// Plans for device buffers split on 16-byte multiples (CollArgs::alignBytes):
// every algorithm x collective still verifies, and every step of a
// collective over one buffer starts on a 16-byte boundary, so the device
// kernel's pieces of an aligned buffer all run as vectors. Host plans
// (alignBytes 0) are unchanged.
#include <gtest/gtest.h>

#include "algorithms/one_shot.h"
#include "algorithms/partition.h"
#include "algorithms/registry.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

constexpr uint32_t kAlign = 16;

// The first step whose local offsets are not kAlign-byte multiples, or "".
std::string misalignedStep(const std::vector<plan::Plan>& plans, uint32_t elemSize) {
  for (size_t r = 0; r < plans.size(); r++)
    for (size_t c = 0; c < plans[r].channels.size(); c++)
      for (const plan::Step& s : plans[r].channels[c].steps) {
        const bool srcBad = s.src != plan::Buf::None && s.srcOff * elemSize % kAlign;
        const bool dstBad = s.dst != plan::Buf::None && s.dstOff * elemSize % kAlign;
        if (srcBad || dstBad)
          return "rank " + std::to_string(r) + " channel " + std::to_string(c) + " srcOff " + std::to_string(s.srcOff) +
                 " dstOff " + std::to_string(s.dstOff);
      }
  return "";
}

algo::CollArgs argsFor(Coll c, int n, uint64_t count, uint32_t elemSize, int ch, uint32_t alignBytes) {
  algo::CollArgs a;
  a.coll = c;
  a.nranks = n;
  a.count = count;
  a.elemSize = elemSize;
  a.nChannels = ch;
  a.root = n - 1;
  a.geometry.slotBytes = 256;
  a.geometry.nSlots = 4;
  a.alignBytes = alignBytes;
  for (int r = 0; r < n; r++) a.hostOf.push_back(r / 2);  // two ranks per host: hier has two levels
  return a;
}

TEST(AlignedSplit, EveryAlgorithmVerifiesAndStartsEveryStepAligned) {
  const Coll colls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce};
  int checked = 0;
  for (int i = 0; i < algo::algoCount(); i++) {
    const algo::AlgoId id = algo::AlgoId(i);
    const Builder build = algo::algoInfo(id).build;
    for (Coll c : colls) {
      if (!algo::algoSupports(id, c)) continue;
      for (int n : {1, 2, 3, 4, 5, 8})
        for (uint64_t count : {1u, 3u, 5u, 17u, 100u, 1009u, 4099u})
          for (uint32_t es : {1u, 2u, 4u, 8u})
            for (int ch : {1, 3}) {
              if (algo::isOneShot(id) && count > 100) continue;  // n steps per piece: keep it short
              const algo::CollArgs a = argsFor(c, n, count, es, ch, kAlign);
              for (bool inPlace : {false, true}) {
                verify::Result r = verify::verify(problemFor(build, a, inPlace));
                ASSERT_TRUE(r.ok) << algo::algoName(id) << " es=" << es << " " << label(a, inPlace) << "\n" << r.text();
              }
              // ReduceScatter/AllGather blocks start at rank * count: aligned
              // only when count is.
              const bool oneBuffer = c != Coll::ReduceScatter && c != Coll::AllGather;
              if (oneBuffer || count * es % kAlign == 0) {
                const std::string bad = misalignedStep(plansFor(build, a), es);
                EXPECT_EQ(bad, "") << algo::algoName(id) << " es=" << es << " " << label(a, false);
              }
              checked++;
            }
    }
  }
  EXPECT_GT(checked, 1000);
}

// The same sweep without alignment does split mid-vector (so the check above
// can fail), and host plans are what they were.
TEST(AlignedSplit, HostPlansSplitOnElements) {
  const algo::CollArgs a = argsFor(Coll::AllReduce, 3, 1009, 4, 3, 0);
  const std::vector<plan::Plan> plans = plansFor(algo::algoInfo(algo::kRing).build, a);
  EXPECT_NE(misalignedStep(plans, 4), "");
  // The channels' parts are evenPart's, element by element.
  for (int c = 0; c < 3; c++) {
    const algo::Range want = algo::evenPart(1009, 3, uint64_t(c)), got = algo::channelPart(a, 3, c);
    EXPECT_EQ(got.off, want.off);
    EXPECT_EQ(got.count, want.count);
  }
}

TEST(AlignedSplit, PartsCoverTheRangeOnUnitBoundaries) {
  for (uint64_t total : {0u, 1u, 3u, 4u, 5u, 63u, 64u, 65u, 1009u})
    for (uint64_t parts : {1u, 2u, 3u, 7u})
      for (uint64_t unit : {1u, 2u, 4u, 16u}) {
        uint64_t next = 0;
        for (uint64_t p = 0; p < parts; p++) {
          const algo::Range r = algo::alignedPart(total, parts, p, unit);
          EXPECT_EQ(r.off, next) << total << "/" << parts << "/" << unit;
          if (r.count) {
            EXPECT_EQ(r.off % unit, 0u) << total << "/" << parts << "/" << unit << " part " << p;
          }
          next = r.off + r.count;
        }
        EXPECT_EQ(next, total) << total << "/" << parts << "/" << unit;
      }
  // A unit that is not a multiple of the element size: element granularity.
  algo::CollArgs a;
  a.elemSize = 8;
  a.alignBytes = 12;
  EXPECT_EQ(algo::splitUnit(a), 1u);
  a.alignBytes = 16;
  EXPECT_EQ(algo::splitUnit(a), 2u);
}

}  // namespace
}  // namespace weft::test
