// Measured calibration curves: interpolation, when the cost model uses them,
// the selector following them, and their tune-file form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

#include "algorithms/cost_model.h"
#include "algorithms/measured_curve.h"
#include "algorithms/selector.h"
#include "src/core/tune_file.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

using algo::AlgoId;
using plan::Coll;

algo::CostInputs inputs(int n, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = 1;
  in.bytes = bytes;
  in.intra = {1.0, 10.0};
  return in;
}

TEST(MeasuredCurve, AddRejectsDisorderAndNonPositive) {
  algo::MeasuredCurve c;
  EXPECT_TRUE(c.add(8, 10));
  EXPECT_FALSE(c.add(8, 12));   // size does not grow
  EXPECT_FALSE(c.add(4, 12));
  EXPECT_FALSE(c.add(16, 0));   // time not positive
  EXPECT_FALSE(c.add(0, 1));
  EXPECT_FALSE(c.add(NAN, 1));
  EXPECT_TRUE(c.add(64, 20));
  EXPECT_EQ(c.nPoints, 2);
  for (int i = 2; i < algo::kMaxMeasuredPoints; i++) EXPECT_TRUE(c.add(std::ldexp(64.0, i), 30.0 + i));
  EXPECT_FALSE(c.add(1e30, 100));  // full
}

TEST(MeasuredCurve, InterpolatesLogLogAndScalesOutsideByTheModel) {
  algo::MeasuredCurve c;
  c.add(100, 10);
  c.add(10000, 1000);
  auto model = [](double b) { return 1.0 + b; };
  EXPECT_DOUBLE_EQ(algo::curveUs(c, 100, model), 10);
  EXPECT_DOUBLE_EQ(algo::curveUs(c, 10000, model), 1000);
  // Halfway in log(bytes) between 100 and 10000 is 1000: halfway in log(time).
  EXPECT_NEAR(algo::curveUs(c, 1000, model), 100, 1e-9);
  // Beyond the ends: the end point times the model's ratio.
  EXPECT_NEAR(algo::curveUs(c, 20001, model), 1000 * 20002.0 / 10001.0, 1e-9);
  EXPECT_NEAR(algo::curveUs(c, 0, model), 10 * 1.0 / 101.0, 1e-12);
}

TEST(CostModel, UsesCurvesOnlyForTheMeasuredShapeAndAllReduce) {
  algo::CostInputs in = inputs(8, 4096);
  const double analytic = algo::estimateUs(Coll::AllReduce, algo::kRing, in);
  in.calibration(algo::kRing).measured.add(4096, 777);
  in.measuredRanks = 8;
  in.measuredHosts = 1;
  EXPECT_TRUE(algo::usesMeasuredCurve(Coll::AllReduce, algo::kRing, in));
  EXPECT_DOUBLE_EQ(algo::estimateUs(Coll::AllReduce, algo::kRing, in), 777);
  // No curve for the tree: its formula.
  EXPECT_FALSE(algo::usesMeasuredCurve(Coll::AllReduce, algo::kBinaryTree, in));
  // Other collectives were not measured.
  EXPECT_FALSE(algo::usesMeasuredCurve(Coll::AllGather, algo::kRing, in));
  // Another shape: the formula.
  algo::CostInputs other = in;
  other.nranks = 4;
  EXPECT_FALSE(algo::usesMeasuredCurve(Coll::AllReduce, algo::kRing, other));
  other = in;
  other.nHosts = 2;
  EXPECT_FALSE(algo::usesMeasuredCurve(Coll::AllReduce, algo::kRing, other));
  in.measuredRanks = 0;
  EXPECT_DOUBLE_EQ(algo::estimateUs(Coll::AllReduce, algo::kRing, in), analytic);
}

TEST(Selector, FollowsMeasuredCurvesAcrossACrossover) {
  // Measured: binarytree faster up to 64 KB, ring faster from 256 KB; the
  // analytic defaults alone would say otherwise somewhere in between.
  algo::CostInputs in = inputs(8, 0);
  in.measuredRanks = 8;
  in.measuredHosts = 1;
  const double sizes[] = {8, 1024, 65536, 262144, 4194304};
  const double ring[] = {300, 320, 600, 900, 8000};
  const double btree[] = {150, 160, 400, 1200, 12000};
  const double dtree[] = {400, 420, 700, 1000, 9000};
  for (int i = 0; i < 5; i++) {
    in.calibration(algo::kRing).measured.add(sizes[i], ring[i]);
    in.calibration(algo::kBinaryTree).measured.add(sizes[i], btree[i]);
    in.calibration(algo::kDoubleTree).measured.add(sizes[i], dtree[i]);
  }
  // The three FIFO algorithms with curves: hier (on one host, the ring
  // itself) has none, and oneshot and doubling, uncalibrated here, would win
  // on their formulas.
  const algo::AlgoFilter measured = algo::parseAlgoFilter("^oneshot,hier,doubling");
  for (int i = 0; i < 5; i++) {
    in.bytes = uint64_t(sizes[i]);
    AlgoId expect = sizes[i] <= 65536 ? algo::kBinaryTree : algo::kRing;
    EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, measured), expect) << sizes[i];
  }
  // A filter still wins over the curves.
  in.bytes = 8;
  EXPECT_EQ(algo::selectAlgo(Coll::AllReduce, in, algo::parseAlgoFilter("^binarytree,hier,oneshot,doubling")), algo::kRing);
}

std::string writeFile(const std::string& text) {
  char path[] = "/tmp/weft-tune-test-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(TuneFile, RoundTripsConstantsAndCurves) {
  algo::CostInputs in = inputs(8, 0);
  in.intra = {2.5, 3.25};
  in.calibration(algo::kBinaryTree).baseUs = 17.5;
  in.calibration(algo::kDoubleTree).bwScale = 0.625;
  in.measuredRanks = 8;
  in.measuredHosts = 1;
  in.calibration(algo::kRing).measured.add(8, 250.125);
  in.calibration(algo::kRing).measured.add(67108864, 86855.4531);
  in.calibration(algo::kBinaryTree).measured.add(8, 120.5);
  std::string path = writeFile("");
  saveTuneFile(path, in, "test");
  algo::CostInputs back = inputs(8, 0);
  loadTuneFile(path, &back);
  EXPECT_DOUBLE_EQ(back.intra.latencyUs, 2.5);
  EXPECT_DOUBLE_EQ(back.intra.bandwidthGBs, 3.25);
  EXPECT_DOUBLE_EQ(back.calibration(algo::kBinaryTree).baseUs, 17.5);
  EXPECT_DOUBLE_EQ(back.calibration(algo::kDoubleTree).bwScale, 0.625);
  EXPECT_EQ(back.measuredRanks, 8);
  EXPECT_EQ(back.measuredHosts, 1);
  ASSERT_EQ(back.calibration(algo::kRing).measured.nPoints, 2);
  EXPECT_DOUBLE_EQ(back.calibration(algo::kRing).measured.bytes[1], 67108864);
  EXPECT_DOUBLE_EQ(back.calibration(algo::kRing).measured.us[1], 86855.4531);
  EXPECT_EQ(back.calibration(algo::kBinaryTree).measured.nPoints, 1);
  EXPECT_EQ(back.calibration(algo::kDoubleTree).measured.nPoints, 0);
  remove(path.c_str());
}

TEST(TuneFile, RejectsBadCurves) {
  const char* bad[] = {
      "measured.nranks 8\nmeasured.nhosts 1\nmeasured.ring 64 10\nmeasured.ring 64 12\n",  // size repeats
      "measured.nranks 8\nmeasured.nhosts 1\nmeasured.ring 64\n",                          // one number
      "measured.nranks 8\nmeasured.nhosts 1\nmeasured.ring 64 0\n",                        // zero time
      "measured.ring 64 10\n",                                                              // no shape
      "measured.nranks 2.5\n",                                                               // not an integer
      "measured.quick 64 10\n",                                                             // unknown algorithm
      "net_bandwidth_gbs 0\n",                                                              // divides the model
      "bw_scale.ring 0\n",
  };
  for (const char* text : bad) {
    std::string path = writeFile(text);
    algo::CostInputs in = inputs(8, 0);
    const algo::CostInputs before = in;
    try {
      loadTuneFile(path, &in);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), weftInvalidArgument) << text;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    // Nothing of a rejected file is applied.
    EXPECT_EQ(in.measuredRanks, before.measuredRanks);
    EXPECT_EQ(in.calibration(algo::kRing).measured.nPoints, 0);
    remove(path.c_str());
  }
}

}  // namespace
}  // namespace weft::test
