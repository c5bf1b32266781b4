// The pure parts of compression, exact on constructed inputs: top-k
// selection, pair packing, scatter-add, sign packing, error feedback, the
// narrow wire conversions, bucket assignment and the overlap sum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "src/compress/reducer.h"
#include "src/compress/sign.h"
#include "src/compress/topk.h"
#include "src/kernels/convert.h"
#include "src/kernels/functors.h"
#include "src/kernels/reduce.h"

namespace weft::compress {
namespace {

TEST(TopK, CountRoundsUpAndClamps) {
  EXPECT_EQ(topkCount(0, 0.5), 0u);
  EXPECT_EQ(topkCount(1000, 0.01), 10u);
  EXPECT_EQ(topkCount(1001, 0.01), 11u);
  EXPECT_EQ(topkCount(10, 1e-9), 1u);
  EXPECT_EQ(topkCount(10, 1.0), 10u);
}

TEST(TopK, SelectsLargestMagnitudesAscending) {
  const std::vector<float> v = {0.5f, -7.0f, 3.0f, 0.0f, -2.0f, 6.0f, 1.0f};
  std::vector<float> order;
  std::vector<uint32_t> chosen(3);
  selectTopK(v, 3, order, chosen);
  EXPECT_EQ(chosen, (std::vector<uint32_t>{1, 2, 5}));
}

TEST(TopK, TiesGoToTheLowerIndexAndNanCounts) {
  const std::vector<float> v = {1.0f, -1.0f, 1.0f, NAN, 1.0f};
  std::vector<float> order;
  std::vector<uint32_t> chosen(3);
  selectTopK(v, 3, order, chosen);
  EXPECT_EQ(chosen, (std::vector<uint32_t>{0, 1, 3}));
}

TEST(TopK, MatchesAFullSortOnRandomInput) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  std::vector<float> v(10007);
  for (float& x : v) x = dist(rng);
  const size_t k = 101;
  std::vector<float> order;
  std::vector<uint32_t> chosen(k);
  selectTopK(v, k, order, chosen);
  std::vector<uint32_t> all(v.size());
  for (uint32_t i = 0; i < all.size(); i++) all[i] = i;
  std::sort(all.begin(), all.end(), [&](uint32_t a, uint32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
  std::vector<uint32_t> expect(all.begin(), all.begin() + k);
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(chosen, expect);
}

// Large inputs take the sampled path: the same set as a full sort, also
// when most entries tie.
TEST(TopK, SampledPathMatchesAFullSort) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  for (bool ties : {false, true}) {
    std::vector<float> v(300007);
    for (float& x : v) x = ties ? float(int(dist(rng) * 2)) : dist(rng);
    const size_t k = 3000;
    std::vector<float> scratch;
    std::vector<uint32_t> chosen(k);
    selectTopK(v, k, scratch, chosen);
    std::vector<uint32_t> all(v.size());
    for (uint32_t i = 0; i < all.size(); i++) all[i] = i;
    std::stable_sort(all.begin(), all.end(), [&](uint32_t a, uint32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
    std::vector<uint32_t> expect(all.begin(), all.begin() + k);
    std::sort(expect.begin(), expect.end());
    EXPECT_EQ(chosen, expect) << (ties ? "with ties" : "distinct");
  }
}

TEST(TopK, PackKeepUnsentAndScatterAdd) {
  const std::vector<float> v = {1.5f, -4.0f, 0.25f, 8.0f};
  const std::vector<uint32_t> chosen = {1, 3};
  std::vector<TopKPair> pairs(2);
  packPairs(v, chosen, pairs);
  EXPECT_EQ(pairs[0].index, 1u);
  EXPECT_EQ(pairs[0].value, -4.0f);
  EXPECT_EQ(pairs[1].index, 3u);
  EXPECT_EQ(pairs[1].value, 8.0f);
  std::vector<float> residual(4, 99.0f);
  keepUnsent(v, chosen, residual);
  EXPECT_EQ(residual, (std::vector<float>{1.5f, 0.0f, 0.25f, 0.0f}));
  // What was sent plus what was kept is the input, exactly.
  std::vector<float> out(4, 0.0f);
  ASSERT_TRUE(scatterAdd(pairs, out));
  for (size_t i = 0; i < v.size(); i++) EXPECT_EQ(out[i] + residual[i], v[i]);
  // Pairs from two ranks at one index add up; an index past the end is refused.
  std::vector<TopKPair> twice = {{2, 1.0f}, {2, 2.0f}, {9, 1.0f}};
  std::vector<float> sum(4, 0.0f);
  EXPECT_FALSE(scatterAdd(twice, sum));
  EXPECT_EQ(sum[2], 3.0f);
}

TEST(Sign, PacksBitsAndMeanMagnitude) {
  const std::vector<float> x = {1.0f, -3.0f, 0.0f, -0.0f, 2.0f};
  std::vector<unsigned char> block(signBlockBytes(x.size()));
  EXPECT_EQ(block.size(), 16u);
  const float scale = packSigns(x, block.data());
  EXPECT_FLOAT_EQ(scale, 6.0f / 5.0f);
  std::vector<float> out(x.size());
  unpackSigns(block.data(), out);
  const float s = scale;
  EXPECT_EQ(out, (std::vector<float>{s, -s, s, s, s}));
  std::vector<float> residual(x.size());
  signResidual(x, block.data(), residual);
  for (size_t i = 0; i < x.size(); i++) EXPECT_EQ(residual[i], x[i] - out[i]);
  unpackSignsAdd(block.data(), out);
  EXPECT_EQ(out[1], -2 * s);
}

TEST(Sign, ManyWordsAndEmptyChunk) {
  std::vector<float> x(130);
  for (size_t i = 0; i < x.size(); i++) x[i] = (i % 3 == 0) ? -1.0f : 1.0f;
  std::vector<unsigned char> block(signBlockBytes(x.size()));
  EXPECT_EQ(block.size(), 8u + 3 * 8u);
  EXPECT_EQ(packSigns(x, block.data()), 1.0f);
  std::vector<float> out(x.size());
  unpackSigns(block.data(), out);
  EXPECT_EQ(out, x);
  std::vector<unsigned char> empty(signBlockBytes(0));
  EXPECT_EQ(packSigns({}, empty.data()), 0.0f);
}

// Error feedback on one rank: over many steps, what was sent plus what is
// kept equals what came in, exactly for TopK (sent entries leave the
// residual whole) and up to float rounding for Sign.
TEST(ErrorFeedback, SentPlusResidualIsTheInput) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  const size_t n = 1000;
  std::vector<float> residual(n, 0.0f), v(n), sent(n, 0.0f), inSum(n, 0.0f);
  std::vector<float> order;
  std::vector<uint32_t> chosen(10);
  std::vector<TopKPair> pairs(10);
  for (int step = 0; step < 50; step++) {
    for (size_t i = 0; i < n; i++) {
      const float g = float(int(dist(rng) * 8)) / 8;  // exact sums
      inSum[i] += g;
      v[i] = g + residual[i];
    }
    selectTopK(v, 10, order, chosen);
    packPairs(v, chosen, pairs);
    keepUnsent(v, chosen, residual);
    ASSERT_TRUE(scatterAdd(pairs, sent));
  }
  for (size_t i = 0; i < n; i++) EXPECT_EQ(sent[i] + residual[i], inSum[i]) << i;
}

TEST(WireConversion, RoundsToNearestEven) {
  const std::vector<float> x = {1.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 1e30f, -2.5f};
  std::vector<uint16_t> w(x.size());
  std::vector<float> back(x.size());
  kernels::floatToNarrow(w.data(), x.data(), x.size(), weftBfloat16);
  kernels::narrowToFloat(back.data(), w.data(), x.size(), weftBfloat16);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);                 // a tie rounds to the even mantissa
  EXPECT_EQ(back[2], 1.0f + 4.0f / 256);    // the other tie rounds up to even
  EXPECT_NEAR(back[3], 1e30f, 1e30f / 256);  // bf16 keeps float32's range
  EXPECT_EQ(back[4], -2.5f);
  kernels::floatToNarrow(w.data(), x.data(), x.size(), weftFloat16);
  kernels::narrowToFloat(back.data(), w.data(), x.size(), weftFloat16);
  EXPECT_EQ(back[1], 1.0f + 1.0f / 256);    // float16 has 10 mantissa bits
  EXPECT_TRUE(std::isinf(back[3]));         // float16 overflows
}

// The fast conversions agree with the reduction functors' scalar ones on
// every kind of value: random bit patterns (NaNs, infinities, subnormals).
TEST(WireConversion, MatchesTheFunctorsBitForBit) {
  std::mt19937 rng(11);
  std::vector<float> x(100003);
  for (float& f : x) {
    const uint32_t u = rng();
    memcpy(&f, &u, 4);
  }
  x[0] = 65504.0f, x[1] = 65520.0f, x[2] = 3.3895314e38f, x[3] = -0.0f, x[4] = 1e-40f;
  std::vector<uint16_t> w(x.size());
  std::vector<float> back(x.size());
  for (weftDataType_t t : {weftBfloat16, weftFloat16}) {
    kernels::floatToNarrow(w.data(), x.data(), x.size(), t);
    kernels::narrowToFloat(back.data(), w.data(), x.size(), t);
    for (size_t i = 0; i < x.size(); i++) {
      const uint16_t want = t == weftBfloat16 ? kernels::floatToBf16(x[i]) : kernels::floatToHalf(x[i]);
      ASSERT_EQ(w[i], want) << kernels::typeName(t) << " encode of element " << i << " = " << x[i];
      const float dec = t == weftBfloat16 ? kernels::bf16ToFloat(w[i]) : kernels::halfToFloat(w[i]);
      if (std::isnan(dec)) ASSERT_TRUE(std::isnan(back[i]));
      else ASSERT_EQ(back[i], dec) << kernels::typeName(t) << " decode of element " << i;
    }
  }
}

TEST(Buckets, ReverseOrderWithASmallFirstBucket) {
  // Bytes of buffers 0..5; filled from 5 down: the first bucket closes at
  // >= 100 bytes (80 + 60), the later ones at >= 300 (250 + 50, 200 + 100).
  const std::vector<size_t> bytes = {100, 200, 50, 250, 60, 80};
  std::vector<int> of;
  EXPECT_EQ(assignBuckets(bytes, 300, 100, of), 3);
  EXPECT_EQ(of, (std::vector<int>{2, 2, 1, 1, 0, 0}));
  // Exactly full buckets leave no empty trailing bucket.
  EXPECT_EQ(assignBuckets({100, 100}, 100, 100, of), 2);
  EXPECT_EQ(of, (std::vector<int>{1, 0}));
}

TEST(Overlap, SumsBusyTimeInsideTheWindow) {
  const std::vector<std::pair<int64_t, int64_t>> busy = {{0, 10}, {15, 30}, {40, 50}};
  EXPECT_EQ(overlapNs(busy, 5, 20), 5 + 5);
  EXPECT_EQ(overlapNs(busy, 0, 100), 10 + 15 + 10);
  EXPECT_EQ(overlapNs(busy, 31, 39), 0);
}

}  // namespace
}  // namespace weft::compress
