// A calibration curve: AllReduce time measured per size by weft-tune on the
// running machine, for one algorithm and one communicator shape. Where it
// exists, the cost model reads times from it instead of from its formulas,
// because per-call overheads (scheduling, cache effects, wake-ups) are not
// linear in the size and a two-constant fit misranks algorithms near their
// crossover. Fixed-size so that CostInputs stays trivially copyable (it is
// all-gathered as bytes at init).
#pragma once

#include <cstdint>

namespace weft::algo {

constexpr int kMaxMeasuredPoints = 32;

struct MeasuredCurve {
  int nPoints = 0;
  double bytes[kMaxMeasuredPoints] = {};  // strictly increasing, > 0
  double us[kMaxMeasuredPoints] = {};     // > 0

  // False when full, when bytes does not grow or a value is not positive.
  bool add(double b, double t);
};

// Time at `bytes` from the curve (nPoints >= 1): log-log interpolation
// between the measured points that enclose it. Outside the measured range
// the nearest end is scaled by the model's own growth,
// t_end x model(bytes) / model(end); `model` is the analytic estimate.
template <typename Model>
double curveUs(const MeasuredCurve& c, double bytes, Model model);

double interpolateLogLog(double b0, double t0, double b1, double t1, double b);

template <typename Model>
double curveUs(const MeasuredCurve& c, double bytes, Model model) {
  const int last = c.nPoints - 1;
  auto scaled = [&](int end) {
    const double atEnd = model(c.bytes[end]);
    return atEnd > 0 ? c.us[end] * model(bytes) / atEnd : c.us[end];
  };
  if (bytes <= c.bytes[0]) return scaled(0);
  if (bytes >= c.bytes[last]) return scaled(last);
  int i = 0;
  while (c.bytes[i + 1] < bytes) i++;
  return interpolateLogLog(c.bytes[i], c.us[i], c.bytes[i + 1], c.us[i + 1], bytes);
}

}  // namespace weft::algo
