// reduce() and transform() for every type x op x apply against references
// computed here independently (exact integers, double arithmetic, the
// double-based narrow-float rounding of reference.h), and every SIMD level
// against the scalar one, bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "src/kernels/loop_table.h"
#include "src/kernels/reduce.h"
#include "src/util/error.h"
#include "tests/kernels/reference.h"

namespace weft::kernels {
namespace {

using testing::refDecode;
using testing::refEncode;
using testing::RefFormat;
using testing::refFormatOf;

constexpr OpKind kOps[] = {OpKind::Sum, OpKind::Prod, OpKind::Max, OpKind::Min, OpKind::Avg, OpKind::PreMulSum};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg", "premulsum"};

bool isFloat(weftDataType_t t) { return t == weftFloat32 || t == weftFloat64 || refFormatOf(t) != nullptr; }
bool isSigned(weftDataType_t t) { return t == weftInt8 || t == weftInt32 || t == weftInt64; }

uint64_t getBits(const std::vector<unsigned char>& buf, size_t i, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, buf.data() + i * size, size);  // little endian
  return v;
}

// The element's value as a double (floating types only).
double valueOf(weftDataType_t t, uint64_t bits) {
  if (t == weftFloat32) return std::bit_cast<float>(uint32_t(bits));
  if (t == weftFloat64) return std::bit_cast<double>(bits);
  return refDecode(uint32_t(bits), *refFormatOf(t));
}

uint64_t bitsOfValue(weftDataType_t t, double v) {
  if (t == weftFloat32) return std::bit_cast<uint32_t>(float(v));
  if (t == weftFloat64) return std::bit_cast<uint64_t>(v);
  return refEncode(v, *refFormatOf(t));
}

// Random element bits. Floats are mostly moderate values (so sums and products
// stay meaningful), with some raw patterns (subnormals, huge values, inf) and,
// when asked, NaNs.
uint64_t randomElement(std::mt19937_64& rng, weftDataType_t t, bool allowNaN) {
  const size_t size = typeSize(t);
  if (!isFloat(t)) return size == 8 ? rng() : rng() & ((uint64_t(1) << (8 * size)) - 1);
  for (;;) {
    const unsigned pick = rng() % 64;
    uint64_t bits;
    if (pick == 0 && allowNaN) return bitsOfValue(t, (rng() & 1) ? NAN : -NAN);
    if (pick < 8) {
      bits = size == 8 ? rng() : rng() & ((uint64_t(1) << (8 * size)) - 1);
    } else {
      const double mant = 1.0 + double(rng() % 1024) / 1024.0;
      const int range = t == weftFloat8e4m3 || t == weftFloat8e5m2 ? 4 : 12;
      const int exp = int(rng() % (2 * range + 1)) - range;
      bits = bitsOfValue(t, std::ldexp((rng() & 1) ? -mant : mant, exp));
    }
    if (allowNaN || !std::isnan(valueOf(t, bits))) return bits;
  }
}

RedOp makeOp(std::mt19937_64& rng, weftDataType_t t, OpKind kind) {
  RedOp op;
  op.kind = kind;
  op.type = t;
  op.nranks = 1 + int(rng() % 9);
  uint64_t scalar;
  if (isFloat(t)) {
    const double choices[] = {1.5, -0.75, 0.3, 3.0, 1.0};
    scalar = bitsOfValue(t, choices[rng() % 5]);
  } else {
    scalar = 2 + rng() % 5;
  }
  std::memcpy(op.scalar, &scalar, typeSize(t));
  return op;
}

struct Expected {
  uint64_t bits;
  bool nan;  // any NaN will do
};

// Integers: exact, in 64-bit unsigned arithmetic reduced mod 2^width.
Expected refInteger(weftDataType_t t, OpKind kind, unsigned apply, const uint64_t* a, const uint64_t* b,
                    uint64_t scalar, int nranks) {
  const int width = int(typeSize(t)) * 8;
  const uint64_t mask = width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
  auto signedOf = [&](uint64_t v) -> int64_t {
    return width == 64 ? int64_t(v) : int64_t(v << (64 - width)) >> (64 - width);
  };
  auto less = [&](uint64_t x, uint64_t y) { return isSigned(t) ? signedOf(x) < signedOf(y) : x < y; };
  uint64_t y = b ? *b : 0;
  if (kind == OpKind::PreMulSum && (apply & kApplyPre)) y = (y * scalar) & mask;
  uint64_t r;
  if (!a) {
    r = y;  // transform
  } else if (kind == OpKind::Prod) {
    r = (*a * y) & mask;
  } else if (kind == OpKind::Max) {
    r = less(*a, y) ? y : *a;
  } else if (kind == OpKind::Min) {
    r = less(y, *a) ? y : *a;
  } else {
    r = (*a + y) & mask;
  }
  if (kind == OpKind::Avg && (apply & kApplyPost)) {
    r = isSigned(t) ? uint64_t(signedOf(r) / int64_t(nranks)) & mask : r / uint64_t(nranks);
  }
  return {r, false};
}

// Floats: each operation in double, then rounded as the library's arithmetic
// type rounds it (float32 for float and the narrow types, double for double)
// when another operation follows, and straight from the double result to the
// element type for the last one.
Expected refFloat(weftDataType_t t, OpKind kind, unsigned apply, const uint64_t* a, const uint64_t* b,
                  uint64_t scalar, int nranks) {
  auto accRound = [&](double v) { return t == weftFloat64 ? v : double(float(v)); };
  double y = valueOf(t, *b);
  double r;
  int steps = 0;
  if (kind == OpKind::PreMulSum && (apply & kApplyPre)) {
    y = y * valueOf(t, scalar);
    ++steps;
  }
  if (a) {
    if (steps) y = accRound(y);
    const double x = valueOf(t, *a);
    if (kind == OpKind::Prod) r = x * y;
    else if (kind == OpKind::Max) r = (std::isnan(x) || x > y) ? x : y;
    else if (kind == OpKind::Min) r = (std::isnan(x) || x < y) ? x : y;
    else r = x + y;
    ++steps;
  } else {
    r = y;
  }
  if (kind == OpKind::Avg && (apply & kApplyPost)) {
    if (steps) r = accRound(r);
    r = r / double(nranks);
    ++steps;
  }
  if (steps == 0 && !a) return {*b, false};  // transform without an operation is a copy
  if (steps > 1) r = accRound(r);
  return {bitsOfValue(t, r), std::isnan(r)};
}

Expected reference(weftDataType_t t, OpKind kind, unsigned apply, const uint64_t* a, const uint64_t* b,
                   uint64_t scalar, int nranks) {
  return isFloat(t) ? refFloat(t, kind, apply, a, b, scalar, nranks)
                    : refInteger(t, kind, apply, a, b, scalar, nranks);
}

std::vector<unsigned char> randomBuffer(std::mt19937_64& rng, weftDataType_t t, size_t count, bool allowNaN) {
  const size_t size = typeSize(t);
  std::vector<unsigned char> buf(count * size + 1);  // never empty, so data() is valid
  for (size_t i = 0; i < count; ++i) {
    const uint64_t v = randomElement(rng, t, allowNaN);
    std::memcpy(buf.data() + i * size, &v, size);
  }
  return buf;
}

// Checks reduce (a and b given) or transform (a null) output against the reference.
void expectMatches(weftDataType_t t, const RedOp& op, unsigned apply, const std::vector<unsigned char>* a,
                   const std::vector<unsigned char>& b, const std::vector<unsigned char>& out, size_t count) {
  const size_t size = typeSize(t);
  uint64_t scalar = 0;
  std::memcpy(&scalar, op.scalar, size);
  size_t wrong = 0;
  for (size_t i = 0; i < count && wrong < 5; ++i) {
    const uint64_t bi = getBits(b, i, size);
    const uint64_t ai = a ? getBits(*a, i, size) : 0;
    const Expected want = reference(t, op.kind, apply, a ? &ai : nullptr, &bi, scalar, op.nranks);
    const uint64_t got = getBits(out, i, size);
    const bool ok = want.nan ? std::isnan(valueOf(t, got)) : got == want.bits;
    if (!ok) {
      ++wrong;
      ADD_FAILURE() << typeName(t) << " " << kOpNames[int(op.kind)] << " apply=" << apply << " n=" << count
                    << " i=" << i << std::hex << " a=0x" << ai << " b=0x" << bi << " scalar=0x" << scalar
                    << std::dec << " nranks=" << op.nranks << std::hex << ": got 0x" << got << " want 0x"
                    << want.bits;
    }
  }
}

TEST(KernelReduce, EveryTypeOpAndApplyMatchesReference) {
  std::mt19937_64 rng(2024);
  for (int ti = 0; ti < weftNumTypes; ++ti) {
    const auto t = weftDataType_t(ti);
    for (OpKind kind : kOps) {
      for (unsigned apply = 0; apply < 4; ++apply) {
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(31), size_t(1000)}) {
          const RedOp op = makeOp(rng, t, kind);
          const bool nan = kind == OpKind::Max || kind == OpKind::Min;
          const auto a = randomBuffer(rng, t, count, nan), b = randomBuffer(rng, t, count, nan);
          auto out = randomBuffer(rng, t, count, true);
          const auto outBefore = out;
          reduce(out.data(), a.data(), b.data(), count, op, apply);
          expectMatches(t, op, apply, &a, b, out, count);
          EXPECT_EQ(out.back(), outBefore.back()) << "wrote past the end";
          transform(out.data(), b.data(), count, op, apply);
          expectMatches(t, op, apply, nullptr, b, out, count);
        }
      }
    }
  }
}

TEST(KernelReduce, InPlaceOnEitherInputMatchesOutOfPlace) {
  std::mt19937_64 rng(7);
  const size_t count = 1001;
  for (int ti = 0; ti < weftNumTypes; ++ti) {
    const auto t = weftDataType_t(ti);
    for (OpKind kind : kOps) {
      const RedOp op = makeOp(rng, t, kind);
      const unsigned apply = kApplyPre | kApplyPost;
      const auto a = randomBuffer(rng, t, count, false), b = randomBuffer(rng, t, count, false);
      auto outOfPlace = a;
      reduce(outOfPlace.data(), a.data(), b.data(), count, op, apply);
      auto intoA = a;
      reduce(intoA.data(), intoA.data(), b.data(), count, op, apply);
      EXPECT_EQ(intoA, outOfPlace) << typeName(t) << " " << kOpNames[int(kind)] << " dst == a";
      auto intoB = b;
      reduce(intoB.data(), a.data(), intoB.data(), count, op, apply);
      EXPECT_EQ(intoB, outOfPlace) << typeName(t) << " " << kOpNames[int(kind)] << " dst == b";
      auto transformed = a;
      transform(transformed.data(), b.data(), count, op, apply);
      auto inPlace = b;
      transform(inPlace.data(), inPlace.data(), count, op, apply);
      EXPECT_EQ(inPlace, transformed) << typeName(t) << " " << kOpNames[int(kind)] << " transform dst == src";
    }
  }
}

TEST(KernelReduce, LargeOddCounts) {
  std::mt19937_64 rng(99);
  const size_t count = 1000003;
  const struct {
    weftDataType_t type;
    OpKind kind;
    unsigned apply;
  } cases[] = {{weftFloat32, OpKind::Sum, 0}, {weftFloat16, OpKind::Avg, kApplyPost},
               {weftInt8, OpKind::PreMulSum, kApplyPre}, {weftBfloat16, OpKind::Max, 0}};
  for (const auto& c : cases) {
    const RedOp op = makeOp(rng, c.type, c.kind);
    const auto a = randomBuffer(rng, c.type, count, false), b = randomBuffer(rng, c.type, count, false);
    auto out = a;
    reduce(out.data(), a.data(), b.data(), count, op, c.apply);
    expectMatches(c.type, op, c.apply, &a, b, out, count);
  }
}

TEST(KernelReduce, IntegerAvgTruncatesTheWrappedSumTowardZero) {
  RedOp op;
  op.kind = OpKind::Avg;
  op.type = weftInt8;
  op.nranks = 3;
  const int8_t a[] = {100, -100, 7, -7, -128};
  const int8_t b[] = {100, -100, 0, 0, 0};
  int8_t out[5];
  reduce(out, a, b, 5, op, kApplyPost);
  // 100+100 wraps to -56; -100-100 wraps to 56.
  EXPECT_EQ(out[0], -18);
  EXPECT_EQ(out[1], 18);
  EXPECT_EQ(out[2], 2);
  EXPECT_EQ(out[3], -2);
  EXPECT_EQ(out[4], -42);
  op.nranks = 200;  // more ranks than int8 can count
  reduce(out, a, b, 5, op, kApplyPost);
  for (int8_t v : out) EXPECT_EQ(v, 0);
  op.type = weftUint64;
  op.nranks = 2;
  const uint64_t ua[] = {~uint64_t(0)}, ub[] = {3};
  uint64_t uout[1];
  reduce(uout, ua, ub, 1, op, kApplyPost);
  EXPECT_EQ(uout[0], 1u);  // (2^64 - 1 + 3) mod 2^64 = 2, halved
}

TEST(KernelReduce, FloatMaxMinPropagateNaN) {
  RedOp op;
  op.type = weftFloat32;
  std::vector<float> a(40, 1.0f), b(40, 2.0f), out(40);
  a[3] = NAN;
  b[17] = NAN;
  a[38] = NAN;  // in the scalar tail
  for (OpKind kind : {OpKind::Max, OpKind::Min}) {
    op.kind = kind;
    reduce(out.data(), a.data(), b.data(), a.size(), op, 0);
    for (size_t i = 0; i < out.size(); ++i) {
      if (i == 3 || i == 17 || i == 38) EXPECT_TRUE(std::isnan(out[i])) << i;
      else EXPECT_EQ(out[i], kind == OpKind::Max ? 2.0f : 1.0f) << i;
    }
  }
}

TEST(KernelReduce, RejectsInvalidArguments) {
  RedOp op;
  op.type = weftDataType_t(weftNumTypes);
  float x = 0;
  EXPECT_THROW(reduce(&x, &x, &x, 1, op, 0), weft::Error);
  op.type = weftFloat32;
  op.kind = OpKind::Avg;
  op.nranks = 0;
  EXPECT_THROW(reduce(&x, &x, &x, 1, op, kApplyPost), weft::Error);
  EXPECT_EQ(typeSize(weftDataType_t(weftNumTypes)), 0u);
  EXPECT_STREQ(typeName(weftDataType_t(weftNumTypes)), "invalid");
}

TEST(KernelReduce, TypeNamesAndSizes) {
  const char* const names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                               "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int t = 0; t < weftNumTypes; ++t) {
    EXPECT_STREQ(typeName(weftDataType_t(t)), names[t]);
    EXPECT_EQ(typeSize(weftDataType_t(t)), sizes[t]);
  }
}

// ---- SIMD levels ----------------------------------------------------------

// Empty when equal; else the first difference. The one allowed difference:
// when both inputs of an element are NaN, which payload and sign survives
// depends on the operand order the compiler picked, so any NaN will do.
std::string firstDifference(weftDataType_t t, const std::vector<unsigned char>& got,
                            const std::vector<unsigned char>& want, const std::vector<unsigned char>* a,
                            const std::vector<unsigned char>* b) {
  const size_t size = typeSize(t);
  auto isNaN = [&](const std::vector<unsigned char>& buf, size_t i) {
    return isFloat(t) && std::isnan(valueOf(t, getBits(buf, i, size)));
  };
  for (size_t i = 0; i < got.size() / size; ++i) {
    const uint64_t g = getBits(got, i, size), w = getBits(want, i, size);
    if (g == w || (a && b && isNaN(*a, i) && isNaN(*b, i) && isNaN(got, i) && isNaN(want, i))) continue;
    char text[96];
    std::snprintf(text, sizeof text, "element %zu: got 0x%llx want 0x%llx", i, (unsigned long long)g,
                  (unsigned long long)w);
    return text;
  }
  return "";
}

struct LevelGuard {
  ~LevelGuard() { forceSimdLevel(defaultSimdLevel()); }
};

std::vector<SimdLevel> availableLevels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512})
    if (simdLevelAvailable(l)) levels.push_back(l);
  return levels;
}

TEST(KernelSimd, ForcedLevelIsReported) {
  LevelGuard guard;
  for (SimdLevel l : availableLevels()) {
    forceSimdLevel(l);
    EXPECT_EQ(activeSimdLevel(), l);
    const char* const names[] = {"scalar", "sse2", "avx2", "avx512"};
#if defined(__x86_64__)
    EXPECT_STREQ(simdLevel(), names[int(l)]);
#endif
  }
  std::printf("SIMD levels here:");
  for (SimdLevel l : availableLevels()) std::printf(" %d", int(l));
  std::printf("; default %d\n", int(defaultSimdLevel()));
}

TEST(KernelSimd, EveryLevelGivesTheScalarLevelsBits) {
  LevelGuard guard;
  std::mt19937_64 rng(31337);
  const size_t count = 4099;  // several vectors of every width, plus a tail
  for (int ti = 0; ti < weftNumTypes; ++ti) {
    const auto t = weftDataType_t(ti);
    const size_t size = typeSize(t);
    for (OpKind kind : kOps) {
      const RedOp op = makeOp(rng, t, kind);
      // Raw bit patterns: NaNs, infinities, subnormals, everything.
      std::vector<unsigned char> a(count * size), b(count * size);
      for (auto& byte : a) byte = static_cast<unsigned char>(rng());
      for (auto& byte : b) byte = static_cast<unsigned char>(rng());
      for (unsigned apply = 0; apply < 4; ++apply) {
        forceSimdLevel(SimdLevel::Scalar);
        std::vector<unsigned char> wantReduce(count * size), wantTransform(count * size);
        reduce(wantReduce.data(), a.data(), b.data(), count, op, apply);
        transform(wantTransform.data(), b.data(), count, op, apply);
        for (SimdLevel l : availableLevels()) {
          forceSimdLevel(l);
          std::vector<unsigned char> got(count * size);
          reduce(got.data(), a.data(), b.data(), count, op, apply);
          EXPECT_EQ(firstDifference(t, got, wantReduce, &a, &b), "") << simdLevel() << " " << typeName(t) << " " << kOpNames[int(kind)]
                                     << " apply=" << apply;
          transform(got.data(), b.data(), count, op, apply);
          EXPECT_EQ(firstDifference(t, got, wantTransform, nullptr, nullptr), "") << simdLevel() << " transform " << typeName(t) << " "
                                        << kOpNames[int(kind)] << " apply=" << apply;
        }
      }
    }
  }
}

// Every half and bfloat16 pattern through each level's load/convert/store
// path (F16C where the level has it): multiplying by 1 must give back the
// pattern, or for a NaN the scalar level's quiet NaN.
TEST(KernelSimd, EverySixteenBitPatternThroughEveryLevel) {
  LevelGuard guard;
  for (weftDataType_t t : {weftFloat16, weftBfloat16}) {
    std::vector<uint16_t> all(1 << 16);
    for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
    RedOp op;
    op.kind = OpKind::PreMulSum;
    op.type = t;
    const uint16_t one = uint16_t(refEncode(1.0, *refFormatOf(t)));
    std::memcpy(op.scalar, &one, 2);
    forceSimdLevel(SimdLevel::Scalar);
    std::vector<uint16_t> want(all.size());
    transform(want.data(), all.data(), all.size(), op, kApplyPre);
    for (size_t i = 0; i < all.size(); ++i) {
      if (std::isnan(refDecode(all[i], *refFormatOf(t)))) continue;
      ASSERT_EQ(want[i], all[i]) << typeName(t) << " " << i;
    }
    for (SimdLevel l : availableLevels()) {
      forceSimdLevel(l);
      std::vector<uint16_t> got(all.size());
      transform(got.data(), all.data(), all.size(), op, kApplyPre);
      EXPECT_EQ(got, want) << simdLevel() << " " << typeName(t);
    }
  }
}

}  // namespace
}  // namespace weft::kernels
