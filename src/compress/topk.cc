#include "src/compress/topk.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace weft::compress {

size_t topkCount(size_t count, double ratio) {
  if (count == 0) return 0;
  double k = std::ceil(ratio * static_cast<double>(count));
  if (!(k >= 1)) return 1;
  if (k >= static_cast<double>(count)) return count;
  return static_cast<size_t>(k);
}

namespace {
inline float magnitude(float x) { return std::isnan(x) ? INFINITY : std::fabs(x); }
}  // namespace

void selectTopK(std::span<const float> v, size_t k, std::vector<float>& mags, std::span<uint32_t> chosen) {
  if (k == 0) return;
  // The k-th largest magnitude by nth_element over a contiguous copy of the
  // magnitudes (O(n) on average, cache-friendly), then one forward pass
  // that takes every entry above it and the lowest-index entries equal to it:
  // the first k of the order (magnitude descending, index ascending), found
  // without sorting, and already ascending.
  mags.resize(v.size());
  for (size_t i = 0; i < v.size(); i++) mags[i] = magnitude(v[i]);
  std::nth_element(mags.begin(), mags.begin() + static_cast<long>(k - 1), mags.end(), std::greater<float>());
  const float threshold = mags[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < k; i++) above += mags[i] > threshold;  // after nth_element, all of them are in front
  size_t ties = k - above, j = 0;
  for (size_t i = 0; i < v.size() && j < k; i++) {
    const float m = magnitude(v[i]);
    if (m > threshold || (m == threshold && ties > 0 && ties--)) chosen[j++] = uint32_t(i);
  }
}

void packPairs(std::span<const float> v, std::span<const uint32_t> chosen, std::span<TopKPair> pairs) {
  for (size_t j = 0; j < chosen.size(); j++) pairs[j] = TopKPair{chosen[j], v[chosen[j]]};
}

void keepUnsent(std::span<const float> v, std::span<const uint32_t> chosen, std::span<float> residual) {
  if (residual.data() != v.data()) std::copy(v.begin(), v.end(), residual.begin());
  for (uint32_t i : chosen) residual[i] = 0.0f;
}

bool scatterAdd(std::span<const TopKPair> pairs, std::span<float> out) {
  for (const TopKPair& p : pairs) {
    if (p.index >= out.size()) return false;
    out[p.index] += p.value;
  }
  return true;
}

}  // namespace weft::compress
