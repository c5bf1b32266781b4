#include "src/compress/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

void selectTopK(std::span<const float> v, size_t k, std::vector<uint32_t>& order, std::span<uint32_t> chosen) {
  order.resize(v.size());
  std::iota(order.begin(), order.end(), uint32_t(0));
  // A strict order on (magnitude descending, index ascending): the k first
  // entries after nth_element are the same set on every run.
  auto larger = [&v](uint32_t a, uint32_t b) {
    const float ma = magnitude(v[a]), mb = magnitude(v[b]);
    return ma > mb || (ma == mb && a < b);
  };
  if (k < v.size()) std::nth_element(order.begin(), order.begin() + static_cast<long>(k), order.end(), larger);
  std::copy(order.begin(), order.begin() + static_cast<long>(k), chosen.begin());
  // Ascending indices: the scatter-add on every rank walks memory forward.
  std::sort(chosen.begin(), chosen.begin() + static_cast<long>(k));
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
