#include "tools/weft-tune/fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace weft::tune {

using algo::Algo;
using plan::Coll;

namespace {

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// True when every algorithm's curve was measured at the same sizes (what
// weft-tune writes), so that a point index is one size for all of them.
bool sameSizesForAllAlgos(const algo::CostInputs& c) {
  for (int a = 1; a < algo::kNumAlgos; a++) {
    if (c.measured[a].nPoints != c.measured[0].nPoints) return false;
    for (int i = 0; i < c.measured[0].nPoints; i++)
      if (c.measured[a].bytes[i] != c.measured[0].bytes[i]) return false;
  }
  return c.measured[0].nPoints > 0;
}

// At each size: the best algorithm's median time stays; every algorithm is
// set to that time x its worst ratio to the best of any one run. The
// smallest time then belongs to the algorithm whose worst run was closest
// to that run's best (minimax regret), not to the one with the best median:
// near a crossover two algorithms trade places from run to run, and the
// median picks whichever won two of three runs, however badly it lost the
// third.
void scaleByWorstRegret(const std::vector<algo::CostInputs>& runs, algo::CostInputs* out) {
  for (const auto& r : runs)
    if (!sameSizesForAllAlgos(r)) return;
  for (int i = 0; i < out->measured[0].nPoints; i++) {
    double worst[algo::kNumAlgos] = {};
    for (const auto& r : runs) {
      double best = r.measured[0].us[i];
      for (int a = 1; a < algo::kNumAlgos; a++) best = std::min(best, r.measured[a].us[i]);
      for (int a = 0; a < algo::kNumAlgos; a++) worst[a] = std::max(worst[a], r.measured[a].us[i] / best);
    }
    double bestMedian = out->measured[0].us[i];
    for (int a = 1; a < algo::kNumAlgos; a++) bestMedian = std::min(bestMedian, out->measured[a].us[i]);
    for (int a = 0; a < algo::kNumAlgos; a++) out->measured[a].us[i] = bestMedian * worst[a];
  }
}

}  // namespace

algo::CostInputs mergeCalibrations(const std::vector<algo::CostInputs>& runs) {
  if (runs.empty()) throw std::invalid_argument("no calibrations to merge");
  algo::CostInputs out = runs[0];
  for (const auto& r : runs) {
    if (r.measuredRanks != out.measuredRanks || r.measuredHosts != out.measuredHosts)
      throw std::invalid_argument("calibrations of different shapes (measured.nranks / measured.nhosts)");
    for (int a = 0; a < algo::kNumAlgos; a++) {
      if (r.measured[a].nPoints != out.measured[a].nPoints)
        throw std::invalid_argument("calibrations with different sizes");
      for (int i = 0; i < r.measured[a].nPoints; i++)
        if (r.measured[a].bytes[i] != out.measured[a].bytes[i])
          throw std::invalid_argument("calibrations with different sizes");
    }
  }
  auto med = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(field(r));
    return medianOf(v);
  };
  out.intra.latencyUs = med([](const algo::CostInputs& r) { return r.intra.latencyUs; });
  out.intra.bandwidthGBs = med([](const algo::CostInputs& r) { return r.intra.bandwidthGBs; });
  out.inter.latencyUs = med([](const algo::CostInputs& r) { return r.inter.latencyUs; });
  out.inter.bandwidthGBs = med([](const algo::CostInputs& r) { return r.inter.bandwidthGBs; });
  for (int a = 0; a < algo::kNumAlgos; a++) {
    out.baseUs[a] = med([a](const algo::CostInputs& r) { return r.baseUs[a]; });
    out.bwScale[a] = med([a](const algo::CostInputs& r) { return r.bwScale[a]; });
    for (int i = 0; i < out.measured[a].nPoints; i++)
      out.measured[a].us[i] = med([a, i](const algo::CostInputs& r) { return r.measured[a].us[i]; });
  }
  scaleByWorstRegret(runs, &out);
  return out;
}

std::vector<double> smoothLogLog(const std::vector<double>& us) {
  std::vector<double> out = us;
  for (size_t i = 1; i + 1 < us.size(); i++) out[i] = std::cbrt(us[i - 1] * us[i] * us[i + 1]);
  return out;
}

algo::CostInputs fitCostInputs(const algo::CostInputs& start, const std::vector<SweepPoint>& points, bool network) {
  algo::CostInputs in = start;
  for (auto& c : in.measured) c = algo::MeasuredCurve{};
  in.measuredRanks = in.measuredHosts = 0;
  if (points.size() < 2) return in;
  const SweepPoint& small = points.front();
  const SweepPoint& large = points.back();
  auto at = [&](size_t bytes) {
    algo::CostInputs c = in;
    c.bytes = bytes;
    return c;
  };
  // The ring fixes the link: its latency term from the small size, its
  // bandwidth from what is left of the large one.
  const int ring = static_cast<int>(Algo::Ring);
  algo::LinkParams& link = network ? in.inter : in.intra;
  link.latencyUs = 1.0;
  link.bandwidthGBs = 1.0;
  if (network) in.intra = link;
  const double latPerUnit = algo::latencyTermUs(Coll::AllReduce, Algo::Ring, at(small.bytes));
  link.latencyUs = small.medianUs[ring] / std::max(latPerUnit, 1e-9);
  if (network) in.intra.latencyUs = link.latencyUs;
  const double bytesAtUnitBw = algo::bytesTermUs(Coll::AllReduce, Algo::Ring, at(large.bytes));
  const double ringBytesUs =
      std::max(large.medianUs[ring] - algo::latencyTermUs(Coll::AllReduce, Algo::Ring, at(large.bytes)), 1e-3);
  link.bandwidthGBs = bytesAtUnitBw / ringBytesUs;
  if (network) in.intra.bandwidthGBs = link.bandwidthGBs;
  // The trees on top of that link: a fixed cost and a factor on bytes.
  for (Algo a : {Algo::Tree, Algo::DoubleTree}) {
    const int i = static_cast<int>(a);
    in.baseUs[i] = 0;
    in.bwScale[i] = 1;
    in.baseUs[i] = std::max(0.0, small.medianUs[i] - algo::latencyTermUs(Coll::AllReduce, a, at(small.bytes)));
    const double bytesUs = algo::bytesTermUs(Coll::AllReduce, a, at(large.bytes));
    const double measured =
        large.medianUs[i] - in.baseUs[i] - algo::latencyTermUs(Coll::AllReduce, a, at(large.bytes));
    in.bwScale[i] = std::max(measured, 1e-3) / std::max(bytesUs, 1e-9);
  }
  in.measuredRanks = start.nranks;
  in.measuredHosts = start.nHosts;
  for (int a = 0; a < algo::kNumAlgos; a++) {
    std::vector<double> us;
    for (const SweepPoint& p : points) us.push_back(std::max(p.medianUs[a], 1e-3));
    us = smoothLogLog(us);
    for (size_t i = 0; i < points.size(); i++) in.measured[a].add(double(points[i].bytes), us[i]);
  }
  return in;
}

}  // namespace weft::tune
