// The device path's logic on the host: the __host__ __device__ functions of
// src/compress/compress_fn.h called directly on constructed inputs (exact),
// and the device's TopK selection (radix select over magnitude keys, then a
// compaction by runs) emulated serially with the same functions, which must
// choose exactly the indices the host's selectTopK chooses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "src/compress/compress_fn.h"
#include "src/compress/sign.h"
#include "src/compress/topk.h"

namespace weft::compress {
namespace {

uint32_t bitsOf(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

TEST(CompressFn, MagnitudeKeyOrdersLikeMagnitudesAndNanIsInfinity) {
  EXPECT_EQ(magnitudeKey(-0.0f), 0u);
  EXPECT_EQ(magnitudeKey(0.0f), 0u);
  EXPECT_EQ(magnitudeKey(-2.5f), bitsOf(2.5f));
  EXPECT_EQ(magnitudeKey(NAN), bitsOf(INFINITY));
  EXPECT_EQ(magnitudeKey(-NAN), bitsOf(INFINITY));
  EXPECT_EQ(magnitudeKey(-INFINITY), bitsOf(INFINITY));
  EXPECT_LT(magnitudeKey(1e-45f), magnitudeKey(1.0f));  // denormal below normal
  EXPECT_LT(magnitudeKey(3.0f), magnitudeKey(-3.5f));
  EXPECT_EQ(topkMagnitude(-NAN), INFINITY);
  EXPECT_EQ(topkMagnitude(-4.0f), 4.0f);
}

TEST(CompressFn, RadixDigitsAndPrefixes) {
  EXPECT_EQ(radixDigit(0x12345678u, 0), 0x12u);
  EXPECT_EQ(radixDigit(0x12345678u, 3), 0x78u);
  EXPECT_TRUE(radixPrefixMatches(0xffffffffu, 0, 0));
  EXPECT_TRUE(radixPrefixMatches(0x1234ffffu, 0x12340000u, 2));
  EXPECT_FALSE(radixPrefixMatches(0x1235ffffu, 0x12340000u, 2));
}

TEST(CompressFn, RadixChooseTakesTheBinThatReachesWant) {
  std::vector<uint32_t> hist(kRadixBins, 0);
  hist[200] = 2;
  hist[100] = 5;
  hist[3] = 10;
  RadixState s{0, 4};  // 2 in bin 200, then 2 more of bin 100's 5
  radixChoose(hist.data(), 0, s);
  EXPECT_EQ(s.prefix, 100u << 24);
  EXPECT_EQ(s.want, 2u);
  RadixState t{0x11000000u, 2};
  radixChoose(hist.data(), 1, t);
  EXPECT_EQ(t.prefix, 0x11c80000u);  // bin 200 holds exactly 2
  EXPECT_EQ(t.want, 2u);
}

TEST(CompressFn, TakeKeepsAboveAndTheFirstTies) {
  // keys: 5 (tie) 9 (above) 5 (tie) 1 5 (tie), threshold 5, 1 tie wanted
  const uint32_t keys[] = {5, 9, 5, 1, 5};
  TopKCounts seen{0, 0};
  uint32_t slot = 99;
  std::vector<int> taken, slots;
  for (int i = 0; i < 5; i++)
    if (topkTake(keys[i], 5, 1, seen, &slot)) {
      taken.push_back(i);
      slots.push_back(int(slot));
    }
  EXPECT_EQ(taken, (std::vector<int>{0, 1}));
  EXPECT_EQ(slots, (std::vector<int>{0, 1}));
  EXPECT_EQ(seen.above, 1u);
  EXPECT_EQ(seen.ties, 3u);
}

TEST(CompressFn, RunCountsAndPackRunWithCountsBefore) {
  const float v[] = {1.0f, -3.0f, 2.0f, -2.0f, 0.5f, 3.0f};
  const uint32_t t = magnitudeKey(2.0f);
  const TopKCounts c = topkRunCounts(v, 0, 6, t);
  EXPECT_EQ(c.above, 2u);
  EXPECT_EQ(c.ties, 2u);
  // Keep 3: both above and the first tie; the second half of the array as
  // its own run, given the counts of the first half.
  std::vector<TopKPair> pairs(3, TopKPair{77, 77.0f});
  const TopKCounts first = topkRunCounts(v, 0, 3, t);
  topkPackRun(v, 3, 6, t, 1, first, pairs.data());
  topkPackRun(v, 0, 3, t, 1, TopKCounts{0, 0}, pairs.data());
  EXPECT_EQ(pairs[0].index, 1u);
  EXPECT_EQ(pairs[0].value, -3.0f);
  EXPECT_EQ(pairs[1].index, 2u);
  EXPECT_EQ(pairs[1].value, 2.0f);
  EXPECT_EQ(pairs[2].index, 5u);
  EXPECT_EQ(pairs[2].value, 3.0f);
}

TEST(CompressFn, ScatterAddAndResidualArithmetic) {
  float out[3] = {1.0f, 2.0f, 3.0f};
  EXPECT_TRUE(scatterAddPair({2, 0.5f}, out, 3));
  EXPECT_FALSE(scatterAddPair({3, 9.0f}, out, 3));
  EXPECT_EQ(out[2], 3.5f);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(withResidual(1.0f, 0.25f), 1.25f);
  EXPECT_EQ(topkRunLength(10), 64u);
  EXPECT_EQ(topkRunLength(kTopKMaxRuns * 100 + 1), 101u);
}

TEST(CompressFn, SignWordScaleDecodeResidual) {
  const float x[] = {1.0f, -2.0f, 0.0f, -0.0f, NAN, -INFINITY};
  EXPECT_EQ(signWord(x, 6), 0b011101u);  // -0 is not < 0: positive
  std::vector<float> many(64, -1.0f);
  many[63] = 1.0f;
  EXPECT_EQ(signWord(many.data(), 64), uint64_t(1) << 63);
  EXPECT_EQ(signScale(6.0, 4), 1.5f);
  EXPECT_EQ(signScale(0.0, 0), 0.0f);
  EXPECT_EQ(signDecode(1.5f, 0b10, 1), 1.5f);
  EXPECT_EQ(signDecode(1.5f, 0b10, 0), -1.5f);
  EXPECT_EQ(signDecode(1.5f, uint64_t(1) << 63, 63), 1.5f);
  EXPECT_EQ(signResidualOf(2.0f, 1.5f), 0.5f);
  EXPECT_EQ(signFactor(false), -1.0f);
}

// The host functions decode exactly as the shared ones.
TEST(CompressFn, HostSignPackingMatchesTheSharedFunctions) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<float> x(130);
  for (float& v : x) v = dist(rng);
  std::vector<unsigned char> block(signBlockBytes(x.size()));
  const float scale = packSigns(x, block.data());
  double sum = 0;
  for (float v : x) sum += std::fabs(v);
  EXPECT_EQ(scale, signScale(sum, x.size()));
  std::vector<float> decoded(x.size()), residual(x.size());
  unpackSigns(block.data(), decoded);
  signResidual(x, block.data(), residual);
  for (size_t i = 0; i < x.size(); i++) {
    uint64_t word;
    memcpy(&word, block.data() + 8 + 8 * (i / 64), 8);
    EXPECT_EQ(word, signWord(x.data() + (i / 64) * 64, std::min<size_t>(64, x.size() - (i / 64) * 64)));
    EXPECT_EQ(decoded[i], signDecode(scale, word, unsigned(i % 64))) << i;
    EXPECT_EQ(residual[i], signResidualOf(x[i], decoded[i])) << i;
  }
}

// The device selection, serially: the histogram passes (each "block" adds
// its part of the histogram), radixChoose per pass, counts per run, an
// exclusive scan over the runs, then each run packed with its offsets.
std::vector<TopKPair> emulateDeviceTopK(const std::vector<float>& v, size_t k, size_t runLen, size_t blockElems) {
  const size_t n = v.size();
  RadixState s{0, uint32_t(k)};
  for (int pass = 0; pass < kRadixPasses; pass++) {
    std::vector<uint32_t> hist(kRadixBins, 0);
    for (size_t b = 0; b < n; b += blockElems) {
      std::vector<uint32_t> local(kRadixBins, 0);
      for (size_t i = b; i < std::min(n, b + blockElems); i++) {
        const uint32_t key = magnitudeKey(v[i]);
        if (radixPrefixMatches(key, s.prefix, pass)) local[radixDigit(key, pass)]++;
      }
      for (int d = 0; d < kRadixBins; d++) hist[d] += local[d];
    }
    radixChoose(hist.data(), pass, s);
  }
  const size_t runs = (n + runLen - 1) / runLen;
  std::vector<TopKCounts> before(runs);
  TopKCounts total{0, 0};
  for (size_t r = 0; r < runs; r++) {
    before[r] = total;
    const TopKCounts c = topkRunCounts(v.data(), r * runLen, std::min(n, (r + 1) * runLen), s.prefix);
    total.above += c.above;
    total.ties += c.ties;
  }
  EXPECT_EQ(total.above + s.want, k);
  std::vector<TopKPair> pairs(k, TopKPair{0xffffffffu, NAN});
  for (size_t r = runs; r-- > 0;)  // any order: the runs write disjoint slots
    topkPackRun(v.data(), r * runLen, std::min(n, (r + 1) * runLen), s.prefix, s.want, before[r], pairs.data());
  return pairs;
}

void expectSameAsHost(const std::vector<float>& v, size_t k) {
  std::vector<float> scratch;
  std::vector<uint32_t> chosen(k);
  selectTopK(v, k, scratch, chosen);
  for (size_t runLen : {size_t(1), size_t(3), size_t(64), topkRunLength(v.size())}) {
    const std::vector<TopKPair> pairs = emulateDeviceTopK(v, k, runLen, 1000);
    ASSERT_EQ(pairs.size(), k);
    size_t bad = 0;
    for (size_t j = 0; j < k; j++) {
      if (pairs[j].index == chosen[j] && bitsOf(pairs[j].value) == bitsOf(v[chosen[j]])) continue;
      if (bad++ < 5)
        ADD_FAILURE() << "n " << v.size() << " k " << k << " run " << runLen << " slot " << j << ": device index "
                      << pairs[j].index << ", host index " << chosen[j];
    }
    EXPECT_EQ(bad, 0u);
  }
}

TEST(DeviceTopKEmulation, ChoosesTheHostIndicesOnRandomData) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(20011)}) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    for (size_t k : {size_t(1), topkCount(n, 0.01), topkCount(n, 0.3), n}) expectSameAsHost(v, k);
  }
}

TEST(DeviceTopKEmulation, ChoosesTheHostIndicesWithTiesZerosAndNans) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> small(-4, 4);
  std::uniform_int_distribution<int> special(0, 19);
  for (size_t n : {size_t(5), size_t(999), size_t(5003)}) {
    std::vector<float> v(n);
    for (float& x : v) {
      const int s = special(rng);
      x = s == 0 ? NAN : s == 1 ? -NAN : s == 2 ? INFINITY : s == 3 ? -0.0f : float(small(rng)) * 0.5f;
    }
    for (size_t k : {size_t(1), size_t(2), n / 10 + 1, n / 2, n - 1, n}) expectSameAsHost(v, k);
  }
}

TEST(DeviceTopKEmulation, LargeInputTakesTheHostSamplingPathAndStillAgrees) {
  // n >= 4 * 65536 with a small k: the host estimates the threshold from a
  // sample; the device selects exactly; both must keep the same entries.
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(300000);
  for (float& x : v) x = float(d(rng)) / 8.0f;  // many ties
  expectSameAsHost(v, topkCount(v.size(), 0.001));
}

// The device's scale for one chunk, serially, in the device's order.
float emulateDeviceScale(const std::vector<float>& x) {
  const size_t len = x.size();
  const unsigned parts = signScaleParts(len);
  const size_t seg = signScaleSegment(len, parts);
  auto tree = [](std::vector<double> sh) {
    for (int half = kSignScaleThreads / 2; half > 0; half /= 2)
      for (int t = 0; t < half; t++) sh[t] += sh[t + half];
    return sh[0];
  };
  std::vector<double> partial(kSignScaleThreads, 0.0);
  for (unsigned b = 0; b < parts; b++) {
    std::vector<double> sh(kSignScaleThreads);
    const size_t begin = b * seg, end = std::min(len, begin + seg);
    for (unsigned t = 0; t < kSignScaleThreads; t++) sh[t] = begin < end ? signThreadSum(x.data(), begin, end, t) : 0.0;
    partial[b] = tree(sh);
  }
  return signScale(tree(partial), len);
}

float hostScale(const std::vector<float>& x) {
  std::vector<unsigned char> block(signBlockBytes(x.size()));
  return packSigns(x, block.data());
}

TEST(DeviceSignEmulation, ScaleEqualsTheHostWhenTheSumsAreExact) {
  // Integers and their residuals (multiples of a power of two) sum exactly
  // in double in any order: the device's tree and the host's loop agree bit
  // for bit (what the GPU test relies on).
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  for (size_t n : {size_t(1), size_t(255), size_t(4097), size_t(200003)}) {
    std::vector<float> x(n);
    for (float& v : x) v = float(int(dist(rng) * 10));
    const float s = hostScale(x);
    EXPECT_EQ(emulateDeviceScale(x), s) << n;
    for (size_t i = 0; i < n; i++) x[i] = signResidualOf(x[i], signDecode(s, x[i] >= 0 ? 1 : 0, 0));
    EXPECT_EQ(emulateDeviceScale(x), hostScale(x)) << n;
  }
}

TEST(DeviceSignEmulation, ScaleIsWithinAnUlpOtherwise) {
  std::mt19937 rng(6);
  std::lognormal_distribution<float> dist(0.0f, 4.0f);
  std::vector<float> x(300007);
  for (float& v : x) v = dist(rng);
  const float host = hostScale(x), device = emulateDeviceScale(x);
  EXPECT_LE(std::fabs(double(host) - double(device)), double(std::nextafter(host, INFINITY) - host));
}

}  // namespace
}  // namespace weft::compress
