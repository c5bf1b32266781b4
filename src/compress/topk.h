// Top-k sparsification: the pure parts (selection, packing, error feedback,
// scatter-add), with no communicator, so they are tested exactly.
//
// A rank's gradient plus its residual is v; it keeps the k entries of v with
// the largest magnitude, sends them as (index, value) pairs, and keeps the
// rest in the residual for the next step (error feedback). Every rank sends
// the same number of pairs (k depends only on the count and the ratio), so
// the exchange is one AllGather of fixed-size blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "src/compress/compress_fn.h"

namespace weft::compress {

// k for `count` elements: ceil(ratio * count), at least 1, at most count
// (0 when count is 0).
size_t topkCount(size_t count, double ratio);

// The indices of the k entries of v with the largest |v|, ascending. O(n)
// on average (nth_element over a sample's candidates or over all
// magnitudes, no sort); ties go to the lower index and NaN counts as the
// largest magnitude, so the choice is deterministic. `scratch` is reused
// between calls.
void selectTopK(std::span<const float> v, size_t k, std::vector<float>& scratch, std::span<uint32_t> chosen);

// pairs[j] = {chosen[j], v[chosen[j]]}.
void packPairs(std::span<const float> v, std::span<const uint32_t> chosen, std::span<TopKPair> pairs);

// Error feedback after a send: residual = v with the sent entries zeroed.
void keepUnsent(std::span<const float> v, std::span<const uint32_t> chosen, std::span<float> residual);

// out[p.index] += p.value for every pair, in order. Returns false (and adds
// nothing further) at a pair whose index is out of range.
bool scatterAdd(std::span<const TopKPair> pairs, std::span<float> out);

}  // namespace weft::compress
