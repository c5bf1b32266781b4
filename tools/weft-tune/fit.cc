#include "tools/weft-tune/fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace weft::tune {

using algo::AlgoId;
using plan::Coll;

std::vector<AlgoId> calibratedAlgos() {
  std::vector<AlgoId> out;
  for (int a = 0; a < algo::algoCount(); a++)
    if (algo::algoSupports(AlgoId(a), Coll::AllReduce)) out.push_back(AlgoId(a));
  return out;
}

namespace {

const algo::MeasuredCurve& curve(const algo::CostInputs& c, AlgoId a) { return c.calibration(a).measured; }
algo::MeasuredCurve& curve(algo::CostInputs& c, AlgoId a) { return c.calibration(a).measured; }

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// True when every algorithm's curve was measured at the same sizes (what
// weft-tune writes), so that a point index is one size for all of them.
bool sameSizesForAllAlgos(const algo::CostInputs& c) {
  const algo::MeasuredCurve& first = curve(c, calibratedAlgos().front());
  for (AlgoId a : calibratedAlgos()) {
    if (curve(c, a).nPoints != first.nPoints) return false;
    for (int i = 0; i < first.nPoints; i++)
      if (curve(c, a).bytes[i] != first.bytes[i]) return false;
  }
  return first.nPoints > 0;
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
  const std::vector<AlgoId> algos = calibratedAlgos();
  for (int i = 0; i < curve(*out, algos.front()).nPoints; i++) {
    std::vector<double> worst(algos.size(), 0.0);
    for (const auto& r : runs) {
      double best = curve(r, algos.front()).us[i];
      for (AlgoId a : algos) best = std::min(best, curve(r, a).us[i]);
      for (size_t k = 0; k < algos.size(); k++) worst[k] = std::max(worst[k], curve(r, algos[k]).us[i] / best);
    }
    double bestMedian = curve(*out, algos.front()).us[i];
    for (AlgoId a : algos) bestMedian = std::min(bestMedian, curve(*out, a).us[i]);
    for (size_t k = 0; k < algos.size(); k++) curve(*out, algos[k]).us[i] = bestMedian * worst[k];
  }
}

}  // namespace

algo::CostInputs mergeCalibrations(const std::vector<algo::CostInputs>& runs) {
  if (runs.empty()) throw std::invalid_argument("no calibrations to merge");
  algo::CostInputs out = runs[0];
  for (const auto& r : runs) {
    if (r.measuredRanks != out.measuredRanks || r.measuredHosts != out.measuredHosts)
      throw std::invalid_argument("calibrations of different shapes (measured.nranks / measured.nhosts)");
    for (int a = 0; a < algo::algoCount(); a++) {
      if (curve(r, AlgoId(a)).nPoints != curve(out, AlgoId(a)).nPoints)
        throw std::invalid_argument("calibrations with different sizes");
      for (int i = 0; i < curve(r, AlgoId(a)).nPoints; i++)
        if (curve(r, AlgoId(a)).bytes[i] != curve(out, AlgoId(a)).bytes[i])
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
  for (int i = 0; i < algo::algoCount(); i++) {
    const AlgoId a = AlgoId(i);
    out.calibration(a).baseUs = med([a](const algo::CostInputs& r) { return r.calibration(a).baseUs; });
    out.calibration(a).bwScale = med([a](const algo::CostInputs& r) { return r.calibration(a).bwScale; });
    for (int k = 0; k < curve(out, a).nPoints; k++)
      curve(out, a).us[k] = med([a, k](const algo::CostInputs& r) { return curve(r, a).us[k]; });
  }
  // The single-copy threshold: the median of the runs that measured one.
  std::vector<double> thresholds;
  for (const auto& r : runs)
    if (r.directMinBytes > 0) thresholds.push_back(double(r.directMinBytes));
  out.directMinBytes = thresholds.empty() ? 0 : uint64_t(medianOf(thresholds));
  scaleByWorstRegret(runs, &out);
  return out;
}

uint64_t directThreshold(const std::vector<SweepPoint>& points, size_t nAlgos) {
  uint64_t from = kDirectNever;
  for (size_t i = points.size(); i-- > 0;) {
    const SweepPoint& p = points[i];
    if (p.medianUs.size() <= nAlgos) break;
    const double best = *std::min_element(p.medianUs.begin(), p.medianUs.begin() + long(nAlgos));
    if (p.medianUs[nAlgos] > best) break;
    from = p.bytes;
  }
  return from;
}

std::vector<double> smoothLogLog(const std::vector<uint64_t>& bytes, const std::vector<double>& us) {
  std::vector<double> out = us;
  for (size_t i = 1; i + 1 < us.size() && i + 1 < bytes.size(); i++) {
    if (bytes[i - 1] == 0 || bytes[i - 1] * 2 < bytes[i] || bytes[i] * 2 < bytes[i + 1]) continue;
    double x[3], y[3], mx = 0, my = 0;
    for (int k = 0; k < 3; k++) {
      x[k] = std::log(double(bytes[i - 1 + size_t(k)]));
      y[k] = std::log(us[i - 1 + size_t(k)]);
      mx += x[k] / 3;
      my += y[k] / 3;
    }
    double sxx = 0, sxy = 0;
    for (int k = 0; k < 3; k++) sxx += (x[k] - mx) * (x[k] - mx), sxy += (x[k] - mx) * (y[k] - my);
    const double slope = sxx > 0 ? sxy / sxx : 0;
    out[i] = std::exp(my + slope * (x[1] - mx));
  }
  return out;
}

algo::CostInputs fitCostInputs(const algo::CostInputs& start, const std::vector<SweepPoint>& points, bool network) {
  algo::CostInputs in = start;
  for (auto& c : in.calib) c.measured = algo::MeasuredCurve{};
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
  const std::vector<AlgoId> algos = calibratedAlgos();
  const size_t ring = size_t(std::find(algos.begin(), algos.end(), algo::kRing) - algos.begin());
  algo::LinkParams& link = network ? in.inter : in.intra;
  link.latencyUs = 1.0;
  link.bandwidthGBs = 1.0;
  if (network) in.intra = link;
  const double latPerUnit = algo::latencyTermUs(Coll::AllReduce, algo::kRing, at(small.bytes));
  link.latencyUs = small.medianUs[ring] / std::max(latPerUnit, 1e-9);
  if (network) in.intra.latencyUs = link.latencyUs;
  const double bytesAtUnitBw = algo::bytesTermUs(Coll::AllReduce, algo::kRing, at(large.bytes));
  const double ringBytesUs =
      std::max(large.medianUs[ring] - algo::latencyTermUs(Coll::AllReduce, algo::kRing, at(large.bytes)), 1e-3);
  link.bandwidthGBs = bytesAtUnitBw / ringBytesUs;
  if (network) in.intra.bandwidthGBs = link.bandwidthGBs;
  // The trees on top of that link: a fixed cost and a factor on bytes.
  for (size_t i = 0; i < algos.size(); i++) {
    if (i == ring) continue;
    const AlgoId a = algos[i];
    algo::AlgoCalibration& cal = in.calibration(a);
    cal.baseUs = 0;
    cal.bwScale = 1;
    cal.baseUs = std::max(0.0, small.medianUs[i] - algo::latencyTermUs(Coll::AllReduce, a, at(small.bytes)));
    const double bytesUs = algo::bytesTermUs(Coll::AllReduce, a, at(large.bytes));
    const double measured = large.medianUs[i] - cal.baseUs - algo::latencyTermUs(Coll::AllReduce, a, at(large.bytes));
    cal.bwScale = std::max(measured, 1e-3) / std::max(bytesUs, 1e-9);
  }
  in.measuredRanks = start.nranks;
  in.measuredHosts = start.nHosts;
  for (size_t k = 0; k < algos.size(); k++) {
    std::vector<double> us;
    std::vector<uint64_t> bytes;
    for (const SweepPoint& p : points) us.push_back(std::max(p.medianUs[k], 1e-3)), bytes.push_back(p.bytes);
    us = smoothLogLog(bytes, us);
    for (size_t i = 0; i < points.size(); i++) curve(in, algos[k]).add(double(points[i].bytes), us[i]);
  }
  return in;
}

}  // namespace weft::tune
