// What a compressed AllReduce must produce, computed on one rank for every
// rank: each test rank knows every rank's inputs (a seeded generator), runs
// the schemes' pure parts in the library's order, and so predicts the result
// bit for bit. Also the bf16/fp16 ring's documented error bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "src/compress/sign.h"
#include "src/compress/topk.h"
#include "weft/weft.h"

namespace weft::test {

// Rank r's gradient at step t: normal values, or small integers (whose sums
// are exact in any order) when `integers`.
inline std::vector<float> gradient(int rank, int step, size_t count, bool integers) {
  std::mt19937 rng(uint32_t(1000003 * rank + 7919 * step + 17));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> g(count);
  for (float& x : g) x = integers ? float(int(dist(rng) * 10)) : dist(rng);
  return g;
}

// Every rank's compressor state, stepped as the library steps it.
class ReferenceCompressor {
 public:
  ReferenceCompressor(int kind, int nranks, size_t count, double ratio, bool errorFeedback)
      : kind_(kind), n_(nranks), count_(count), ratio_(ratio), ef_(errorFeedback),
        chunk_((count + nranks - 1) / nranks), worker_(nranks, std::vector<float>(count, 0.0f)),
        owner_(nranks, std::vector<float>(chunk_, 0.0f)) {}

  // The result every rank must receive for these inputs (inputs[r] = rank r's).
  std::vector<float> step(const std::vector<std::vector<float>>& inputs) {
    return kind_ == weftCompressTopK ? topk(inputs) : sign(inputs);
  }
  // Rank r's residual as weftCompressorResidual lays it out.
  std::vector<float> residual(int r) const {
    if (!ef_) return {};
    std::vector<float> all = worker_[r];
    if (kind_ == weftCompressSign) all.insert(all.end(), owner_[r].begin(), owner_[r].end());
    else all.resize(count_);
    return all;
  }

 private:
  std::vector<float> input(int r, const std::vector<float>& g) const {
    std::vector<float> v = g;
    if (ef_)
      for (size_t i = 0; i < count_; i++) v[i] = g[i] + worker_[r][i];
    return v;
  }

  std::vector<float> topk(const std::vector<std::vector<float>>& inputs) {
    const size_t k = compress::topkCount(count_, ratio_);
    std::vector<compress::TopKPair> all;
    for (int r = 0; r < n_; r++) {
      std::vector<float> v = input(r, inputs[r]);
      std::vector<float> order;
  std::vector<uint32_t> chosen(k);
      compress::selectTopK(v, k, order, chosen);
      std::vector<compress::TopKPair> pairs(k);
      compress::packPairs(v, chosen, pairs);
      all.insert(all.end(), pairs.begin(), pairs.end());
      if (ef_) compress::keepUnsent(v, chosen, worker_[r]);
    }
    std::vector<float> out(count_, 0.0f);
    compress::scatterAdd(all, out);
    return out;
  }

  size_t off(int r) const { return std::min(count_, size_t(r) * chunk_); }
  size_t len(int r) const { return std::min(chunk_, count_ - off(r)); }

  std::vector<float> sign(const std::vector<std::vector<float>>& inputs) {
    const size_t block = compress::signBlockBytes(chunk_);
    // packed[r][o]: rank r's chunk for owner o.
    std::vector<std::vector<unsigned char>> packed(n_, std::vector<unsigned char>(block * n_));
    for (int r = 0; r < n_; r++) {
      std::vector<float> v = input(r, inputs[r]);
      for (int o = 0; o < n_; o++) {
        compress::packSigns({v.data() + off(o), len(o)}, packed[r].data() + o * block);
        if (ef_)
          compress::signResidual({v.data() + off(o), len(o)}, packed[r].data() + o * block,
                                 {worker_[r].data() + off(o), len(o)});
      }
    }
    std::vector<float> out(count_);
    for (int o = 0; o < n_; o++) {
      std::vector<float> sum(len(o), 0.0f);
      for (int r = 0; r < n_; r++) compress::unpackSignsAdd(packed[r].data() + o * block, sum);
      if (ef_)
        for (size_t i = 0; i < len(o); i++) sum[i] += owner_[o][i];
      std::vector<unsigned char> again(block);
      compress::packSigns(sum, again.data());
      if (ef_) compress::signResidual(sum, again.data(), {owner_[o].data(), len(o)});
      compress::unpackSigns(again.data(), {out.data() + off(o), len(o)});
    }
    return out;
  }

  int kind_, n_;
  size_t count_;
  double ratio_;
  bool ef_;
  size_t chunk_;
  std::vector<std::vector<float>> worker_, owner_;
};

// The bf16/fp16 ring's bound (docs/compression.md): each partial sum is
// formed in float32 and rounded to the wire format once per hop, n times in
// all, so |result - sum| <= ((1 + d)^n - 1) sum|x| with d = u + 2^-23 (u
// the format's unit roundoff: 2^-8 bf16, 2^-11 fp16; 2^-23 covers the
// float32 addition before each rounding).
inline double narrowBound(int kind, int nranks, double sumAbs) {
  const double u = kind == weftCompressBf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  return (std::pow(1 + u + std::ldexp(1.0, -23), nranks) - 1) * sumAbs;
}

}  // namespace weft::test
