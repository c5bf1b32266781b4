// weft-tune's fit: smoothing of measured curves and the file's contents.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "algorithms/one_shot.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "tools/weft-tune/fit.h"

namespace weft::test {
namespace {

TEST(WeftTuneFit, SmoothingIsAGeometricMeanOfNeighbours) {
  const std::vector<uint64_t> bytes = {1024, 2048, 4096, 8192};
  std::vector<double> us = {10, 40, 10, 100};
  std::vector<double> s = tune::smoothLogLog(bytes, us);
  EXPECT_DOUBLE_EQ(s[0], 10);   // ends kept
  EXPECT_DOUBLE_EQ(s[3], 100);
  EXPECT_NEAR(s[1], std::cbrt(10.0 * 40 * 10), 1e-9);
  EXPECT_NEAR(s[2], std::cbrt(40.0 * 10 * 100), 1e-9);
  // A power law (a straight line in log-log) is left as it is.
  std::vector<double> line = {1, 2, 4, 8, 16};
  std::vector<double> t = tune::smoothLogLog({8, 16, 32, 64, 128}, line);
  for (size_t i = 0; i < line.size(); i++) EXPECT_NEAR(t[i], line[i], 1e-9);
}

// Neighbours a factor 4 away are too far to average across: the ring's
// measured 2 MB point (446 us, 2 processes over shm) between 512 KB and
// 4 MB stays as measured, where a plain mean of the three would have put
// it at 545 us, above recursive doubling's 496.
TEST(WeftTuneFit, PointsWithFarNeighboursAreKeptAsMeasured) {
  const std::vector<uint64_t> bytes = {131072, 524288, 2097152, 4194304};
  const std::vector<double> ring = {70.56, 288.69, 446.28, 883.41};
  std::vector<double> s = tune::smoothLogLog(bytes, ring);
  for (size_t i = 0; i < ring.size(); i++) EXPECT_DOUBLE_EQ(s[i], ring[i]) << i;
  // Uneven but close (x2 then x1.5): the least-squares line, which keeps a
  // power law exact where the plain mean of three would not.
  const std::vector<uint64_t> uneven = {1000, 2000, 3000};
  const std::vector<double> cubic = {1, 8, 27};
  s = tune::smoothLogLog(uneven, cubic);
  EXPECT_NEAR(s[1], 8, 1e-9);
  EXPECT_GT(std::abs(std::cbrt(1.0 * 8 * 27) - 8), 1.0);
}

TEST(WeftTuneFit, CurvesForTheMeasuredShapeAndFittedLinks) {
  algo::CostInputs start;
  start.nranks = 8;
  start.nHosts = 1;
  std::vector<tune::SweepPoint> points;
  for (size_t b : {size_t(8), size_t(1024), size_t(1 << 20), size_t(64 << 20)}) {
    tune::SweepPoint p;
    p.bytes = b;
    // ring: 100 us + bytes at 1 GB/s x 1.75; the trees slower per byte;
    // hier (the ring itself on one host, timed apart) and oneshot slower
    // everywhere. One time per timed algorithm, in calibratedAlgos() order.
    for (algo::AlgoId a : tune::calibratedAlgos()) {
      const std::string name = algo::algoName(a);
      const double kb = double(b) / 1e3;
      p.medianUs.push_back(name == "ring"         ? 100 + 1.75 * kb
                           : name == "binarytree" ? 50 + 3.0 * kb
                           : name == "tree"       ? 200 + 2.0 * kb
                           : name == "hier"       ? 400 + 2.5 * kb
                                                  : 300 + 20.0 * kb);
    }
    points.push_back(p);
  }
  algo::CostInputs in = tune::fitCostInputs(start, points, false);
  EXPECT_EQ(in.measuredRanks, 8);
  EXPECT_EQ(in.measuredHosts, 1);
  for (int a = 0; a < algo::algoCount(); a++) ASSERT_EQ(in.calibration(algo::AlgoId(a)).measured.nPoints, 4);
  EXPECT_DOUBLE_EQ(in.calibration(algo::AlgoId(0)).measured.bytes[3], double(64 << 20));
  EXPECT_DOUBLE_EQ(in.calibration(algo::AlgoId(0)).measured.us[0], points[0].medianUs[0]);  // an end: not smoothed
  // The ring gives the link: 14 hops at the small size, 1.75 B per byte at 1 GB/s.
  EXPECT_NEAR(in.intra.latencyUs, 100.0 / 14, 0.01);
  EXPECT_NEAR(in.intra.bandwidthGBs, 1.0, 0.01);
  // The selector then follows the curves for this shape.
  algo::AlgoFilter all;
  in.nranks = 8;
  in.nHosts = 1;
  in.bytes = 8;
  EXPECT_EQ(algo::selectAlgo(plan::Coll::AllReduce, in, all), algo::kBinaryTree);
  in.bytes = 64 << 20;
  EXPECT_EQ(algo::selectAlgo(plan::Coll::AllReduce, in, all), algo::kRing);
}

TEST(WeftTuneFit, MergeTakesMediansAndRefusesOtherShapes) {
  std::vector<algo::CostInputs> runs(3);
  const double ring[3] = {10, 30, 20}, lat[3] = {1, 3, 2};
  for (int k = 0; k < 3; k++) {
    runs[k].measuredRanks = 8;
    runs[k].measuredHosts = 1;
    runs[k].intra.latencyUs = lat[k];
    for (int a = 0; a < algo::algoCount(); a++) {
      runs[k].calibration(algo::AlgoId(a)).measured.add(8, a == 0 ? ring[k] : 5.0 + k);
      runs[k].calibration(algo::AlgoId(a)).measured.add(1024, 100);
    }
  }
  algo::CostInputs m = tune::mergeCalibrations(runs);
  // 8 B: the trees were best in every run (median 6); the ring's worst run
  // was 30 / 6 = 5 times the best.
  EXPECT_DOUBLE_EQ(m.calibration(algo::AlgoId(1)).measured.us[0], 6);
  EXPECT_DOUBLE_EQ(m.calibration(algo::AlgoId(2)).measured.us[0], 6);
  EXPECT_DOUBLE_EQ(m.calibration(algo::AlgoId(0)).measured.us[0], 30);
  EXPECT_DOUBLE_EQ(m.calibration(algo::AlgoId(0)).measured.us[1], 100);  // all equal: the median
  EXPECT_DOUBLE_EQ(m.intra.latencyUs, 2);
  runs[2].measuredRanks = 4;
  EXPECT_THROW(tune::mergeCalibrations(runs), std::invalid_argument);
  runs[2].measuredRanks = 8;
  runs[2].calibration(algo::AlgoId(1)).measured.bytes[1] = 2048;
  EXPECT_THROW(tune::mergeCalibrations(runs), std::invalid_argument);
  EXPECT_THROW(tune::mergeCalibrations({}), std::invalid_argument);
}

// Near a crossover: the ring wins two runs by 3% and loses the third by 30%;
// binarytree is never more than 3% off. The median would pick the ring; the
// merge must make binarytree the smallest.
TEST(WeftTuneFit, MergePicksTheAlgorithmNeverFarFromTheBest) {
  const double ring[3] = {100, 100, 130}, btree[3] = {103, 103, 100}, tree[3] = {120, 125, 140};
  std::vector<algo::CostInputs> runs(3);
  for (int k = 0; k < 3; k++) {
    runs[k].measuredRanks = 8;
    runs[k].measuredHosts = 1;
    runs[k].calibration(algo::kRing).measured.add(4 << 20, ring[k]);
    runs[k].calibration(algo::kBinaryTree).measured.add(4 << 20, btree[k]);
    runs[k].calibration(algo::kDoubleTree).measured.add(4 << 20, tree[k]);
    for (algo::AlgoId a : tune::calibratedAlgos())  // every other algorithm: never close
      if (runs[k].calibration(a).measured.nPoints == 0) runs[k].calibration(a).measured.add(4 << 20, 500);
  }
  algo::CostInputs m = tune::mergeCalibrations(runs);
  const double r = m.calibration(algo::kRing).measured.us[0];
  const double b = m.calibration(algo::kBinaryTree).measured.us[0];
  const double t = m.calibration(algo::kDoubleTree).measured.us[0];
  EXPECT_NEAR(r, 100 * 1.30, 1e-9);  // best median 100 x the ring's 130/100
  EXPECT_NEAR(b, 100 * 1.03, 1e-9);
  EXPECT_NEAR(t, 100 * 1.40, 1e-9);
  m.nranks = 8;
  m.nHosts = 1;
  m.bytes = 4 << 20;
  EXPECT_EQ(algo::selectAlgo(plan::Coll::AllReduce, m, algo::AlgoFilter{}), algo::kBinaryTree);
}

}  // namespace
}  // namespace weft::test
