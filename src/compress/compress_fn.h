// The per-element logic of TopK and Sign compression, shared by the host
// code (topk.cc, sign.cc) and the CUDA kernels (device_topk.cu,
// device_sign.cu): it must compile as host C++ and as CUDA device code, so
// no std::, no exceptions, no allocation. The host and the device make the
// same choices because they call the same functions.
//
// TopK on the device: the k-th largest magnitude is found by a radix select
// over the magnitudes' bits (four passes of 8-bit digits: a histogram of the
// keys that match the digits chosen so far, then radixChoose), and the
// chosen entries are compacted in index order by "runs" (consecutive
// indices one thread walks in order): topkRunCounts per run, an exclusive
// scan of the counts, then topkTake over each run again with the counts of
// the runs before it. tests/compress/compress_device_logic_test.cc runs the
// same steps serially on the host.
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "src/kernels/functors.h"

namespace weft::compress {

// One kept entry on the wire: 8 bytes, host byte order (ranks of one
// communicator share it).
struct TopKPair {
  uint32_t index;
  float value;
};
static_assert(sizeof(TopKPair) == 8);

// ---- TopK -----------------------------------------------------------------

// The order key of |x|: the bits of |x| (for non-negative floats the bits
// order like the values), with every NaN mapped to +infinity's bits, so NaN
// counts as the largest magnitude (equal to infinity; ties go to the lower
// index).
WEFT_FN uint32_t magnitudeKey(float x) {
  const uint32_t u = kernels::ScalarLanes::asBits(x) & 0x7fffffffu;
  return u > 0x7f800000u ? 0x7f800000u : u;
}
WEFT_FN float topkMagnitude(float x) { return kernels::ScalarLanes::asFloat(magnitudeKey(x)); }

// Radix select: four passes, each choosing 8 bits of the threshold key from
// the most significant down.
constexpr int kRadixPasses = 4;
constexpr int kRadixBins = 256;

WEFT_FN uint32_t radixDigit(uint32_t key, int pass) { return (key >> (24 - 8 * pass)) & 0xffu; }

// Whether key's digits above pass `pass` equal those already chosen.
WEFT_FN bool radixPrefixMatches(uint32_t key, uint32_t prefix, int pass) {
  return pass == 0 || (key >> (32 - 8 * pass)) == (prefix >> (32 - 8 * pass));
}

// prefix: the digits chosen so far. want: how many entries are still to be
// taken among the keys that match them (k at the start; after the last
// pass, how many of the entries whose key equals the threshold are taken:
// the lowest-index ones).
struct RadixState {
  uint32_t prefix;
  uint32_t want;
};

// Chooses pass `pass`'s digit from the histogram of the matching keys'
// digits: the highest digit whose bin, with the bins above it, reaches want.
WEFT_FN void radixChoose(const uint32_t* hist, int pass, RadixState& s) {
  for (int d = kRadixBins - 1; d >= 0; d--) {
    if (hist[d] >= s.want || d == 0) {
      s.prefix |= uint32_t(d) << (24 - 8 * pass);
      return;
    }
    s.want -= hist[d];
  }
}

// Entries above the threshold key, and entries equal to it, seen so far.
struct TopKCounts {
  uint32_t above;
  uint32_t ties;
};

// Whether the entry with `key` is kept, given what came before it in index
// order (`seen`, updated); *slot is its position among the kept entries,
// which is therefore ascending in index. needTies: how many entries equal
// to the threshold are kept.
WEFT_FN bool topkTake(uint32_t key, uint32_t threshold, uint32_t needTies, TopKCounts& seen, uint32_t* slot) {
  if (key > threshold) {
    *slot = seen.above + (seen.ties < needTies ? seen.ties : needTies);
    seen.above++;
    return true;
  }
  if (key == threshold) {
    const bool take = seen.ties < needTies;
    *slot = seen.above + seen.ties;
    seen.ties++;
    return take;
  }
  return false;
}

// The counts of v[begin, end).
WEFT_FN TopKCounts topkRunCounts(const float* v, size_t begin, size_t end, uint32_t threshold) {
  TopKCounts c{0, 0};
  for (size_t i = begin; i < end; i++) {
    const uint32_t key = magnitudeKey(v[i]);
    c.above += key > threshold;
    c.ties += key == threshold;
  }
  return c;
}

// Packs the kept entries of v[begin, end), given the counts of the entries
// before begin.
WEFT_FN void topkPackRun(const float* v, size_t begin, size_t end, uint32_t threshold, uint32_t needTies,
                         TopKCounts before, TopKPair* pairs) {
  uint32_t slot = 0;
  for (size_t i = begin; i < end; i++)
    if (topkTake(magnitudeKey(v[i]), threshold, needTies, before, &slot)) pairs[slot] = TopKPair{uint32_t(i), v[i]};
}

// The device splits n entries into at most kTopKMaxRuns runs of at least 64
// entries.
constexpr size_t kTopKMaxRuns = 65536;
WEFT_FN size_t topkRunLength(size_t n) {
  const size_t len = (n + kTopKMaxRuns - 1) / kTopKMaxRuns;
  return len < 64 ? 64 : len;
}

// Scatter-add of one received pair; false for an index out of range.
WEFT_FN bool scatterAddPair(TopKPair p, float* out, size_t count) {
  if (p.index >= count) return false;
  out[p.index] += p.value;
  return true;
}

// Error feedback's input: the gradient plus what earlier steps did not send.
WEFT_FN float withResidual(float x, float residual) { return x + residual; }

// ---- Sign -----------------------------------------------------------------

// Bit i of the word: x[i] >= 0 (zero and NaN count as positive), for
// n <= 64 entries.
WEFT_FN uint64_t signWord(const float* x, size_t n) {
  uint64_t word = 0;
  for (size_t i = 0; i < n; i++) word |= uint64_t(!(x[i] < 0.0f)) << i;
  return word;
}

// The scale of a chunk: its mean magnitude, from the sum of |x| in double.
WEFT_FN float signScale(double sumAbs, size_t n) { return n == 0 ? 0.0f : static_cast<float>(sumAbs / double(n)); }

// The device sums a chunk's magnitudes by a fixed tree, so the scale is the
// same on every run: signScaleParts blocks each take a segment of
// signScaleSegment entries; in a block, thread t sums entries t, t + 256,
// ... of the segment in order (signThreadSum), then the 256 sums are added
// pairwise (i += i + half, half = 128, 64, ..., 1); the blocks' sums are
// added the same way by one block.
constexpr int kSignScaleThreads = 256;
WEFT_FN unsigned signScaleParts(size_t chunkElems) {
  size_t p = (chunkElems + kSignScaleThreads * 16 - 1) / (kSignScaleThreads * 16);
  if (p > kSignScaleThreads) p = kSignScaleThreads;
  return p < 1 ? 1u : unsigned(p);
}
WEFT_FN size_t signScaleSegment(size_t chunkElems, unsigned parts) { return (chunkElems + parts - 1) / parts; }
WEFT_FN double signThreadSum(const float* x, size_t begin, size_t end, unsigned t) {
  double sum = 0;
  for (size_t i = begin + t; i < end; i += kSignScaleThreads) sum += fabsf(x[i]);
  return sum;
}

// +1 or -1 for a sign bit.
WEFT_FN float signFactor(bool positive) { return positive ? 1.0f : -1.0f; }

// Entry `bit` of a word decoded with the chunk's scale.
WEFT_FN float signDecode(float scale, uint64_t word, unsigned bit) {
  return scale * signFactor(((word >> bit) & 1u) != 0);
}

// Error feedback: what the decoded value missed.
WEFT_FN float signResidualOf(float x, float decoded) { return x - decoded; }

}  // namespace weft::compress
