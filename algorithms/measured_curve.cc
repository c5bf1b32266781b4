#include "algorithms/measured_curve.h"

#include <cmath>

namespace weft::algo {

bool MeasuredCurve::add(double b, double t) {
  if (nPoints >= kMaxMeasuredPoints || !(b > 0) || !(t > 0)) return false;
  if (nPoints > 0 && !(b > bytes[nPoints - 1])) return false;
  bytes[nPoints] = b;
  us[nPoints] = t;
  nPoints++;
  return true;
}

double interpolateLogLog(double b0, double t0, double b1, double t1, double b) {
  const double f = (std::log(b) - std::log(b0)) / (std::log(b1) - std::log(b0));
  return std::exp(std::log(t0) + f * (std::log(t1) - std::log(t0)));
}

}  // namespace weft::algo
