#include "algorithms/cost_model.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "algorithms/registry.h"

namespace weft::algo {

bool usesMeasuredCurve(plan::Coll c, AlgoId a, const CostInputs& in) {
  return c == plan::Coll::AllReduce && in.nranks > 1 && in.measuredRanks == in.nranks &&
         in.measuredHosts == in.nHosts && in.calibration(a).measured.nPoints > 0;
}

double estimateUs(plan::Coll c, AlgoId a, const CostInputs& in) {
  if (!algoApplies(a, c, in)) return std::numeric_limits<double>::infinity();
  if (in.nranks <= 1) return in.intra.latencyUs;
  const AlgoCalibration& cal = in.calibration(a);
  auto cost = algoInfo(a).cost;
  auto model = [&](double bytes) {
    CostTerms t = cost(c, in, bytes);
    return cal.baseUs + t.latUs + cal.bwScale * t.bytesUs;
  };
  if (usesMeasuredCurve(c, a, in)) return curveUs(cal.measured, double(in.bytes), model);
  return model(double(in.bytes));
}

double latencyTermUs(plan::Coll c, AlgoId a, const CostInputs& in) {
  // The analytic term even where `a` does not apply: a call that names it
  // still needs a pipeline shape.
  if (!algoSupports(a, c)) return std::numeric_limits<double>::infinity();
  return in.nranks <= 1 ? 0.0 : algoInfo(a).cost(c, in, double(in.bytes)).latUs;
}

double bytesTermUs(plan::Coll c, AlgoId a, const CostInputs& in) {
  if (!algoSupports(a, c)) return 0.0;
  return in.nranks <= 1 ? 0.0 : algoInfo(a).cost(c, in, double(in.bytes)).bytesUs;
}

void setHostPlacement(CostInputs& in, const std::vector<int>& hostOf) {
  in.nHostRuns = 0;
  if (hostOf.empty()) return;
  std::vector<int> perHost(size_t(*std::max_element(hostOf.begin(), hostOf.end())) + 1, 0);
  for (int h : hostOf) perHost[size_t(h)]++;
  perHost.erase(std::remove(perHost.begin(), perHost.end(), 0), perHost.end());
  in.hostRanksMin = *std::min_element(perHost.begin(), perHost.end());
  in.hostRanksMax = *std::max_element(perHost.begin(), perHost.end());
  int runs = 0;
  for (size_t r = 0; r < hostOf.size(); r++) {
    if (r == 0 || hostOf[r] != hostOf[r - 1]) {
      if (++runs > kMaxHostRuns || hostOf[r] > UINT16_MAX) return void(in.nHostRuns = 0);  // even blocks stand in
      in.hostRuns[runs - 1] = 1;
      in.hostRunHost[runs - 1] = uint16_t(hostOf[r]);
    } else if (in.hostRuns[runs - 1]++ == UINT16_MAX) {
      return void(in.nHostRuns = 0);
    }
  }
  in.nHostRuns = runs;
}

std::vector<int> hostOfRanks(const CostInputs& in) {
  const int n = std::max(in.nranks, 1), H = std::clamp(in.nHosts, 1, n);
  std::vector<int> host(size_t(n), 0);
  const int runs = std::clamp(in.nHostRuns, 0, kMaxHostRuns);
  int listed = 0;
  for (int i = 0; i < runs; i++) listed += in.hostRuns[i];
  if (listed == n && runs > 0) {
    for (int i = 0, r = 0; i < runs; i++)
      for (int k = 0; k < in.hostRuns[i]; k++) host[size_t(r++)] = in.hostRunHost[i];
    return host;
  }
  const int per = (n + H - 1) / H;
  for (int r = 0; r < n; r++) host[size_t(r)] = r / per;
  return host;
}

double hopLatencyUs(const CostInputs& in) {
  return std::clamp(in.nHosts, 1, std::max(in.nranks, 1)) > 1 ? in.inter.latencyUs : in.intra.latencyUs;
}

double linkBytesPerUs(const CostInputs& in) {
  const bool multiHost = std::clamp(in.nHosts, 1, std::max(in.nranks, 1)) > 1;
  return 1e3 * (multiHost ? std::min(in.inter.bandwidthGBs, in.intra.bandwidthGBs) : in.intra.bandwidthGBs);
}

}  // namespace weft::algo
