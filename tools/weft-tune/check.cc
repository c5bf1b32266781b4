#include "tools/weft-tune/check.h"

#include <algorithm>
#include <cmath>

namespace weft::tune {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

ChoiceVerdict judgeChoice(const std::vector<std::vector<double>>& samples, const std::vector<double>& medians,
                          size_t chosen) {
  ChoiceVerdict v;
  for (size_t k = 0; k < medians.size(); k++)
    if (medians[k] < medians[v.best]) v.best = k;
  const std::vector<double>& best = samples[v.best];
  const std::vector<double>& mine = samples[chosen];
  std::vector<double> ratios;
  for (size_t r = 0; r < std::min(best.size(), mine.size()); r++)
    if (best[r] > 0) ratios.push_back(mine[r] / best[r]);
  v.ratio = chosen == v.best || ratios.empty() ? 1.0 : quantile(ratios, 0.5);
  const double mid = quantile(best, 0.5);
  v.noise = mid > 0 ? (quantile(best, 0.75) - quantile(best, 0.25)) / mid : 0;
  return v;
}

}  // namespace weft::tune
