#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "benchmarks/common/collective.h"
#include "benchmarks/common/dtype.h"
#include "benchmarks/common/verify.h"

namespace weft::bench {
namespace {

TEST(BenchTypes, NarrowFloatsRoundTripEveryPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const double h = halfBitsToDouble(static_cast<uint16_t>(bits));
    if (!std::isnan(h)) {
      ASSERT_EQ(floatToHalfBits(h), bits) << bits;
    }
    const double b = bf16BitsToDouble(static_cast<uint16_t>(bits));
    if (!std::isnan(b)) {
      ASSERT_EQ(floatToBf16Bits(b), bits) << bits;
    }
  }
  for (uint32_t bits = 0; bits < 256; ++bits) {
    const double a = fp8E4M3BitsToDouble(static_cast<uint8_t>(bits));
    if (!std::isnan(a)) {
      ASSERT_EQ(floatToFp8E4M3Bits(a), bits) << bits;
    }
    const double b = fp8E5M2BitsToDouble(static_cast<uint8_t>(bits));
    if (!std::isnan(b)) {
      ASSERT_EQ(floatToFp8E5M2Bits(b), bits) << bits;
    }
  }
}

TEST(BenchTypes, KnownValuesAndRounding) {
  EXPECT_EQ(floatToHalfBits(1.0), 0x3c00);
  EXPECT_EQ(floatToHalfBits(65504.0), 0x7bff);
  EXPECT_EQ(floatToHalfBits(1e6), 0x7c00);          // overflow to infinity
  EXPECT_EQ(floatToHalfBits(2049.0), floatToHalfBits(2048.0));  // tie to even
  EXPECT_EQ(floatToBf16Bits(1.0), 0x3f80);
  EXPECT_EQ(fp8E4M3BitsToDouble(0x7e), 448.0);
  EXPECT_EQ(floatToFp8E4M3Bits(1000.0), 0x7e);      // e4m3 saturates
  EXPECT_TRUE(std::isnan(fp8E4M3BitsToDouble(0x7f)));
  EXPECT_EQ(fp8E5M2BitsToDouble(0x7b), 57344.0);
  EXPECT_EQ(ulpAt(weftFloat16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(ulpAt(weftInt32, 5.0), 1.0);
}

// Reduces the ranks' inputs in the type's own arithmetic, rounding after
// every step, in the given rank order: what a library could legitimately do.
std::vector<char> reduceInType(const CheckSpec& spec, size_t count, const std::vector<int>& order) {
  const size_t elt = typeInfo(spec.type).size;
  std::vector<std::vector<char>> inputs(static_cast<size_t>(spec.nranks), std::vector<char>(count * elt));
  for (int r = 0; r < spec.nranks; ++r) {
    CheckSpec mine = spec;
    mine.rank = r;
    fillInput(mine, inputs[static_cast<size_t>(r)].data(), count);
  }
  std::vector<char> out(count * elt);
  for (size_t i = 0; i < count; ++i) {
    auto term = [&](int r) {
      double v = loadElement(spec.type, inputs[static_cast<size_t>(r)].data(), i);
      return spec.op == BenchOp::MulSum ? v * mulSumScalar(r) : v;
    };
    char acc[8];
    storeElement(spec.type, acc, 0, term(order[0]));
    for (size_t k = 1; k < order.size(); ++k) {
      const double a = loadElement(spec.type, acc, 0), b = term(order[k]);
      double r = 0;
      switch (spec.op) {
        case BenchOp::Sum: case BenchOp::Avg: case BenchOp::MulSum: r = a + b; break;
        case BenchOp::Prod: r = a * b; break;
        case BenchOp::Max: r = std::max(a, b); break;
        case BenchOp::Min: r = std::min(a, b); break;
      }
      storeElement(spec.type, acc, 0, r);
    }
    double v = loadElement(spec.type, acc, 0);
    if (spec.op == BenchOp::Avg) v = typeInfo(spec.type).isFloat ? v / spec.nranks : std::trunc(v / spec.nranks);
    storeElement(spec.type, out.data(), i, v);
  }
  return out;
}

TEST(BenchVerify, ReductionsAreExactInAnyOrderForEveryTypeAndOp) {
  const size_t count = 131;
  const std::vector<BenchOp> allOps = *parseOps("all");
  for (int t = 0; t < weftNumTypes; ++t) {
    for (BenchOp op : allOps) {
      for (int n : {1, 2, 3, 5, 8, 16}) {
        CheckSpec spec{CollKind::AllReduce, static_cast<weftDataType_t>(t), op, n, n - 1, 0};
        const Shape shape = shapeFor(CollKind::AllReduce, count * typeInfo(spec.type).size, typeInfo(spec.type).size, n);
        std::vector<int> forward, backward;
        for (int r = 0; r < n; ++r) forward.push_back(r);
        backward.assign(forward.rbegin(), forward.rend());
        for (const auto& order : {forward, backward}) {
          std::vector<char> out = reduceInType(spec, count, order);
          ASSERT_EQ(countWrong(spec, shape, out.data()), 0)
              << typeInfo(spec.type).name << " " << opName(op) << " n=" << n;
        }
      }
    }
  }
}

TEST(BenchVerify, WrongElementsAreCounted) {
  CheckSpec spec{CollKind::AllReduce, weftFloat32, BenchOp::Sum, 4, 1, 0};
  const Shape shape = shapeFor(spec.kind, 64 * 4, 4, 4);
  std::vector<char> out = reduceInType(spec, 64, {0, 1, 2, 3});
  storeElement(spec.type, out.data(), 5, loadElement(spec.type, out.data(), 5) + 1);
  poison(out.data() + 10 * 4, 4);
  EXPECT_EQ(countWrong(spec, shape, out.data()), 2);
}

TEST(BenchVerify, AvgOnFloatsAllowsTwoUlps) {
  CheckSpec spec{CollKind::AllReduce, weftFloat32, BenchOp::Avg, 3, 0, 0};
  const Shape shape = shapeFor(spec.kind, 4, 4, 3);
  float got = static_cast<float>(expectedValue(spec, shape, 0));
  const float exact = got;
  got = std::nextafter(std::nextafter(got, 1e9f), 1e9f);
  EXPECT_EQ(countWrong(spec, shape, &got), 0);
  got = std::nextafter(got, 1e9f);
  EXPECT_EQ(countWrong(spec, shape, &got), 1) << exact;
}

TEST(BenchVerify, DataMovementExpectations) {
  const int n = 4;
  const size_t elt = 4;
  // AllGather: block j of every rank's output is rank j's input.
  CheckSpec spec{CollKind::AllGather, weftInt32, BenchOp::Sum, n, 2, 0};
  Shape shape = shapeFor(spec.kind, 64 * n * elt, elt, n);
  ASSERT_EQ(shape.paramCount, 64u);
  std::vector<int32_t> out(shape.recvCount);
  for (int r = 0; r < n; ++r) {
    CheckSpec sender = spec;
    sender.rank = r;
    fillInput(sender, out.data() + r * 64, 64);
  }
  EXPECT_EQ(countWrong(spec, shape, out.data()), 0);
  out[130] ^= 1;
  EXPECT_EQ(countWrong(spec, shape, out.data()), 1);

  // Broadcast from root 3, SendRecv from the previous rank, and the
  // non-root ranks of Reduce, which have no result to check.
  spec = {CollKind::Broadcast, weftInt32, BenchOp::Sum, n, 1, 3};
  shape = shapeFor(spec.kind, 32 * elt, elt, n);
  std::vector<int32_t> rootIn(32);
  CheckSpec root = spec;
  root.rank = 3;
  fillInput(root, rootIn.data(), 32);
  EXPECT_EQ(countWrong(spec, shape, rootIn.data()), 0);
  spec.kind = CollKind::SendRecv;
  CheckSpec prev = spec;
  prev.rank = 0;
  std::vector<int32_t> fromPrev(32);
  fillInput(prev, fromPrev.data(), 32);
  EXPECT_EQ(countWrong(spec, shape, fromPrev.data()), 0);
  EXPECT_GT(countWrong(spec, shape, rootIn.data()), 0);
  spec.kind = CollKind::Reduce;
  EXPECT_FALSE(hasResult(spec));
}

TEST(BenchCollective, ShapesAndBandwidthFactors) {
  Shape s = shapeFor(CollKind::ReduceScatter, 1 << 20, 4, 3);
  EXPECT_EQ(s.recvCount, 87380u);  // (262144 / 3) rounded down to 16 bytes
  EXPECT_EQ(s.sendCount, 3 * 87380u);
  EXPECT_EQ(s.recvInplaceOffset, 87380u);
  EXPECT_EQ(reportedBytes(CollKind::ReduceScatter, s, 4), 3 * 87380u * 4);
  s = shapeFor(CollKind::AllGather, 8, 4, 4);
  EXPECT_EQ(s.paramCount, 0u);
  s = shapeFor(CollKind::AllReduce, 8388608, 4, 8);
  EXPECT_EQ(s.paramCount, 2097152u);
  // The reference line: 8388608 B in 63.09 us is 132.96 GB/s, 232.68 bus on 8 ranks.
  const double algbw = algBytes(CollKind::AllReduce, s, 4, 8) / 1e9 / 63.09e-6;
  EXPECT_NEAR(algbw, 132.96, 0.01);
  EXPECT_NEAR(algbw * busFactor(CollKind::AllReduce, 8), 232.68, 0.01);
  EXPECT_DOUBLE_EQ(busFactor(CollKind::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busFactor(CollKind::Broadcast, 4), 1.0);
  s = shapeFor(CollKind::AllToAll, 1024, 4, 4);
  EXPECT_DOUBLE_EQ(algBytes(CollKind::AllToAll, s, 4, 4), 1024.0);
  EXPECT_TRUE(inPlaceDefined(CollKind::AllGather));
  EXPECT_TRUE(inPlaceDefined(CollKind::AllToAll));
  EXPECT_FALSE(inPlaceDefined(CollKind::SendRecv));
}

}  // namespace
}  // namespace weft::bench
