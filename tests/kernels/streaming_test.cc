// The streaming (non-temporal store) kernels give exactly the bytes of
// reduce()/transform() and memcpy: every type and op, odd counts, outputs at
// every alignment, several outputs at once, in place, and nothing written
// outside the output.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "src/kernels/reduce.h"
#include "src/kernels/streaming.h"

namespace weft::kernels {
namespace {

constexpr unsigned char kPoison = 0xA5;

std::vector<unsigned char> randomBytes(size_t n, uint64_t seed, weftDataType_t type) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  // Small values for the wide floats, so products and sums stay finite.
  if (type == weftFloat32)
    for (size_t i = 0; i + 4 <= n; i += 4) {
      const float f = float(int(rng() % 200) - 100) / 8.0f;
      memcpy(&v[i], &f, 4);
    }
  if (type == weftFloat64)
    for (size_t i = 0; i + 8 <= n; i += 8) {
      const double d = double(int(rng() % 2000) - 1000) / 16.0;
      memcpy(&v[i], &d, 8);
    }
  return v;
}

RedOp opOf(OpKind kind, weftDataType_t type) {
  RedOp op;
  op.kind = kind;
  op.type = type;
  op.nranks = 3;
  if (kind == OpKind::PreMulSum) {
    const double two = 2.0;
    const float twoF = 2.0f;
    if (type == weftFloat64) memcpy(op.scalar, &two, 8);
    else if (type == weftFloat32) memcpy(op.scalar, &twoF, 4);
    else op.scalar[0] = 2;
  }
  return op;
}

TEST(KernelStreaming, CopyAtEveryAlignmentAndLength) {
  const std::vector<unsigned char> src = randomBytes(70000, 1, weftUint8);
  for (size_t dstOff : {0, 1, 7, 15, 16, 33}) {
    for (size_t len : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(63), size_t(64), size_t(65), size_t(4097),
                       size_t(65536 + 13)}) {
      std::vector<unsigned char> dst(len + 128, kPoison);
      copyStreaming(dst.data() + dstOff, src.data() + 3, len);
      ASSERT_EQ(memcmp(dst.data() + dstOff, src.data() + 3, len), 0) << dstOff << " " << len;
      for (size_t b = 0; b < dstOff; b++) ASSERT_EQ(dst[b], kPoison);
      for (size_t b = dstOff + len; b < dst.size(); b++) ASSERT_EQ(dst[b], kPoison);
    }
  }
}

TEST(KernelStreaming, ReduceAndTransformMatchTheCachedLoops) {
  const weftDataType_t types[] = {weftInt8, weftUint8, weftInt32, weftUint32, weftInt64, weftUint64, weftFloat16,
                                  weftFloat32, weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};
  const OpKind ops[] = {OpKind::Sum, OpKind::Prod, OpKind::Max, OpKind::Min, OpKind::Avg, OpKind::PreMulSum};
  uint64_t seed = 10;
  for (weftDataType_t t : types) {
    const size_t es = typeSize(t);
    for (OpKind k : ops) {
      const RedOp op = opOf(k, t);
      for (size_t count : {size_t(1), size_t(5), kStreamBlockBytes / es + 3, 3 * kStreamBlockBytes / es - 1}) {
        for (unsigned apply : {0u, unsigned(kApplyPre), unsigned(kApplyPost), unsigned(kApplyPre | kApplyPost)}) {
          const auto a = randomBytes(count * es, seed++, t), b = randomBytes(count * es, seed++, t);
          std::vector<unsigned char> want(count * es), got1(count * es + 64, kPoison), got2(count * es + 64, kPoison);
          reduce(want.data(), a.data(), b.data(), count, op, apply);
          void* const two[2] = {got1.data(), got2.data() + 1};
          reduceStreaming(two, 2, a.data(), b.data(), count, op, apply);
          ASSERT_EQ(memcmp(got1.data(), want.data(), want.size()), 0) << typeName(t) << " " << opName(k);
          ASSERT_EQ(memcmp(got2.data() + 1, want.data(), want.size()), 0) << typeName(t) << " " << opName(k);
          ASSERT_EQ(got1[want.size()], kPoison);
          ASSERT_EQ(got2[0], kPoison);
          ASSERT_EQ(got2[want.size() + 1], kPoison);
          // In place on the first input.
          std::vector<unsigned char> inPlace = a;
          void* const self[1] = {inPlace.data()};
          reduceStreaming(self, 1, inPlace.data(), b.data(), count, op, apply);
          ASSERT_EQ(inPlace, want) << "in place " << typeName(t) << " " << opName(k);
          // transform.
          transform(want.data(), a.data(), count, op, apply);
          void* const one[1] = {got1.data()};
          transformStreaming(one, 1, a.data(), count, op, apply);
          ASSERT_EQ(memcmp(got1.data(), want.data(), want.size()), 0) << "transform " << typeName(t) << " " << opName(k);
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::kernels
