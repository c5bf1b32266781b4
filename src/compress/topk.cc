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
inline float magnitude(float x) { return topkMagnitude(x); }
}  // namespace

namespace {

constexpr size_t kSample = 1 << 16;

// The k-th largest magnitude of v. Large inputs with a small k: a strided
// sample gives a threshold that keeps about twice k entries (plus margin),
// and nth_element runs only over the entries at or above it; when too few
// pass (an unlucky sample), over all of them. Either way O(n) on average.
float kthMagnitude(std::span<const float> v, size_t k, std::vector<float>& scratch) {
  const size_t n = v.size();
  if (n >= 4 * kSample && k <= n / 16) {
    const size_t stride = n / kSample;
    scratch.resize(kSample);
    for (size_t j = 0; j < kSample; j++) scratch[j] = magnitude(v[j * stride]);
    const size_t want = std::min(kSample - 1, 2 * (k * kSample / n) + 64);
    std::nth_element(scratch.begin(), scratch.begin() + static_cast<long>(want), scratch.end(), std::greater<float>());
    const float estimate = scratch[want];
    scratch.clear();
    for (float x : v)
      if (magnitude(x) >= estimate) scratch.push_back(magnitude(x));
    if (scratch.size() >= k) {
      std::nth_element(scratch.begin(), scratch.begin() + static_cast<long>(k - 1), scratch.end(),
                       std::greater<float>());
      return scratch[k - 1];
    }
  }
  scratch.resize(n);
  for (size_t i = 0; i < n; i++) scratch[i] = magnitude(v[i]);
  std::nth_element(scratch.begin(), scratch.begin() + static_cast<long>(k - 1), scratch.end(), std::greater<float>());
  return scratch[k - 1];
}

}  // namespace

void selectTopK(std::span<const float> v, size_t k, std::vector<float>& scratch, std::span<uint32_t> chosen) {
  if (k == 0) return;
  // The k-th largest magnitude, then one forward pass that takes every
  // entry above it and the lowest-index entries equal to it: the first k of
  // the order (magnitude descending, index ascending), found without
  // sorting, and already ascending.
  const float threshold = kthMagnitude(v, k, scratch);
  const uint32_t key = magnitudeKey(threshold);
  const TopKCounts all = topkRunCounts(v.data(), 0, v.size(), key);
  const uint32_t needTies = uint32_t(k - all.above);
  TopKCounts seen{0, 0};
  uint32_t slot = 0;
  for (size_t i = 0; i < v.size() && seen.above + std::min(seen.ties, needTies) < k; i++)
    if (topkTake(magnitudeKey(v[i]), key, needTies, seen, &slot)) chosen[slot] = uint32_t(i);
}

void packPairs(std::span<const float> v, std::span<const uint32_t> chosen, std::span<TopKPair> pairs) {
  for (size_t j = 0; j < chosen.size(); j++) pairs[j] = TopKPair{chosen[j], v[chosen[j]]};
}

void keepUnsent(std::span<const float> v, std::span<const uint32_t> chosen, std::span<float> residual) {
  if (residual.data() != v.data()) std::copy(v.begin(), v.end(), residual.begin());
  for (uint32_t i : chosen) residual[i] = 0.0f;
}

bool scatterAdd(std::span<const TopKPair> pairs, std::span<float> out) {
  for (const TopKPair& p : pairs)
    if (!scatterAddPair(p, out.data(), out.size())) return false;
  return true;
}

}  // namespace weft::compress
