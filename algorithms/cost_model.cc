#include "algorithms/cost_model.h"

#include <algorithm>
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

double hopLatencyUs(const CostInputs& in) {
  return std::clamp(in.nHosts, 1, std::max(in.nranks, 1)) > 1 ? in.inter.latencyUs : in.intra.latencyUs;
}

double linkBytesPerUs(const CostInputs& in) {
  const bool multiHost = std::clamp(in.nHosts, 1, std::max(in.nranks, 1)) > 1;
  return 1e3 * (multiHost ? std::min(in.inter.bandwidthGBs, in.intra.bandwidthGBs) : in.intra.bandwidthGBs);
}

}  // namespace weft::algo
