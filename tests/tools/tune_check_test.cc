// weft-tune --check's verdict (tools/weft-tune/check.h), and the selector's
// (algorithm, protocol) choices read from a tune file such as a calibration
// writes: what the check compares against the measurement.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "algorithms/one_shot.h"
#include "algorithms/protocols.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/core/tune_file.h"
#include "src/util/error.h"
#include "tools/weft-tune/check.h"
#include "tools/weft-tune/fit.h"

namespace weft::test {
namespace {

using plan::Coll;

TEST(TuneCheck, PairsSamplesByRoundSoCommonLoadCancels) {
  // Load that lasts a round slows every communicator timed in it: the
  // choice is 5% slower than the best in every round.
  const std::vector<double> load = {1, 3, 1, 5, 1, 2, 1, 4, 1};
  std::vector<std::vector<double>> s(3);
  for (double f : load) {
    s[0].push_back(100 * f);
    s[1].push_back(105 * f);
    s[2].push_back(300 * f);
  }
  const std::vector<double> med = {200, 210, 600};
  tune::ChoiceVerdict v = tune::judgeChoice(s, med, 1);
  EXPECT_EQ(v.best, 0u);
  EXPECT_NEAR(v.ratio, 1.05, 1e-12);
  EXPECT_GT(v.noise, 0.5);  // the samples themselves swing by far more than 5%
  EXPECT_DOUBLE_EQ(tune::judgeChoice(s, med, 0).ratio, 1.0);
  EXPECT_NEAR(tune::judgeChoice(s, med, 2).ratio, 3.0, 1e-12);
}

TEST(TuneCheck, AChoiceThatIsSlowerInMostRoundsFails) {
  // 20% slower in 6 of 9 rounds, faster in 3 (their load fell on the best):
  // the median of the pairs still says 1.2.
  std::vector<std::vector<double>> s = {{100, 100, 100, 100, 100, 100, 300, 300, 300},
                                        {120, 120, 120, 120, 120, 120, 130, 130, 130}};
  tune::ChoiceVerdict v = tune::judgeChoice(s, {100, 120}, 1);
  EXPECT_EQ(v.best, 0u);
  EXPECT_NEAR(v.ratio, 1.2, 1e-12);
  EXPECT_GT(v.ratio, 1.10);
}

TEST(TuneCheck, Quantiles) {
  EXPECT_DOUBLE_EQ(tune::quantile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(tune::quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(tune::quantile({4, 1, 2, 3}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(tune::quantile({1, 2, 3, 4, 5}, 0.25), 2);
  EXPECT_DOUBLE_EQ(tune::quantile({1, 2, 3, 4, 5}, 1.0), 5);
}

// A calibration of 4 ranks on one host as weft-tune writes it: one-shot
// (ll) fastest up to 4 KB, recursive doubling at 16-64 KB, then the ring.
const char* kFourRanks =
    "shm_latency_us 3\nshm_bandwidth_gbs 4\nmeasured.nranks 4\nmeasured.nhosts 1\n"
    "measured.ring 8 40\nmeasured.ring 4096 45\nmeasured.ring 65536 80\nmeasured.ring 4194304 2000\n"
    "measured.binarytree 8 30\nmeasured.binarytree 4096 34\nmeasured.binarytree 65536 95\n"
    "measured.binarytree 4194304 3000\n"
    "measured.tree 8 45\nmeasured.tree 4096 50\nmeasured.tree 65536 110\nmeasured.tree 4194304 2600\n"
    "measured.hier 8 41\nmeasured.hier 4096 46\nmeasured.hier 65536 82\nmeasured.hier 4194304 2050\n"
    "measured.oneshot 8 6\nmeasured.oneshot 4096 14\nmeasured.oneshot 65536 150\nmeasured.oneshot 4194304 9000\n"
    "measured.doubling 8 20\nmeasured.doubling 4096 22\nmeasured.doubling 65536 60\n"
    "measured.doubling 4194304 3500\n";

algo::CostInputs fromText(const char* text, int nranks) {
  algo::CostInputs in;
  in.nranks = nranks;
  in.nHosts = 1;
  std::istringstream s(text);
  readTune(s, "test.tune", &in);
  return in;
}

std::string pick(const algo::CostInputs& base, uint64_t bytes, const algo::ProtoFilter& protos = {}) {
  algo::CostInputs in = base;
  in.bytes = bytes;
  algo::CallChoice c = algo::selectCall(Coll::AllReduce, in, algo::AlgoFilter{}, plan::FifoGeometry{}, protos);
  return std::string(algo::algoName(c.algo)) + "/" + algo::protoName(c.proto);
}

TEST(TuneCheck, SelectorFollowsATuneFilesCurvesIncludingLlAndDoubling) {
  const algo::CostInputs in = fromText(kFourRanks, 4);
  EXPECT_EQ(pick(in, 8), "oneshot/ll");
  EXPECT_EQ(pick(in, 4096), "oneshot/ll");
  EXPECT_EQ(pick(in, 65536), "doubling/simple");
  EXPECT_EQ(pick(in, 4194304), "ring/simple");
  // Without ll (no shared region: WEFT_PROTO=simple, or sockets) the
  // one-shot curve cannot run on 4 ranks: doubling is next.
  const algo::ProtoFilter simpleOnly = algo::parseProtoFilter("simple");
  EXPECT_EQ(pick(in, 8, simpleOnly), "doubling/simple");
  EXPECT_EQ(pick(in, 65536, simpleOnly), "doubling/simple");
}

tune::SweepPoint point(size_t bytes, std::vector<double> us) {
  tune::SweepPoint p;
  p.bytes = bytes;
  p.medianUs = std::move(us);
  return p;
}

TEST(TuneCheck, DirectThresholdIsWhereSingleCopyWinsFromThereOn) {
  // Two algorithms, then the direct column.
  std::vector<tune::SweepPoint> pts = {point(8, {5, 6, 30}), point(65536, {40, 50, 35}), point(262144, {90, 95, 100}),
                                       point(1 << 20, {300, 320, 200}), point(4 << 20, {1200, 1100, 600})};
  EXPECT_EQ(tune::directThreshold(pts, 2), uint64_t(1) << 20);  // 64 KB won alone, 256 KB lost
  pts[2].medianUs[2] = 80;
  EXPECT_EQ(tune::directThreshold(pts, 2), 65536u);
  pts.back().medianUs[2] = 1101;
  EXPECT_EQ(tune::directThreshold(pts, 2), tune::kDirectNever);  // loses at the largest size
  EXPECT_EQ(tune::directThreshold({point(8, {5, 6})}, 2), tune::kDirectNever);  // not measured
}

TEST(TuneCheck, DirectThresholdTravelsInTheTuneFileWithItsShape) {
  algo::CostInputs in = fromText(kFourRanks, 4);
  EXPECT_EQ(in.directMinBytes, 0u);
  std::string text = std::string(kFourRanks) + "direct_min_bytes 524288\n";
  in = fromText(text.c_str(), 4);
  EXPECT_EQ(in.directMinBytes, 524288u);
  std::istringstream noShape("direct_min_bytes 524288\n");
  algo::CostInputs bare;
  EXPECT_THROW(readTune(noShape, "t", &bare), Error);
  std::istringstream fraction("measured.nranks 4\nmeasured.nhosts 1\ndirect_min_bytes 0.5\n");
  EXPECT_THROW(readTune(fraction, "t", &bare), Error);
  // Merged calibrations keep the median threshold.
  algo::CostInputs a = in, b = in, c = in;
  b.directMinBytes = 1 << 20;
  c.directMinBytes = 2 << 20;
  EXPECT_EQ(tune::mergeCalibrations({a, b, c}).directMinBytes, uint64_t(1) << 20);
}

}  // namespace
}  // namespace weft::test
