// float16 / bfloat16 / fp8 <-> float32 conversions against the double-based
// reference, over every bit pattern of the narrow types and over hand-picked
// rounding ties, overflow and NaN cases.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "src/kernels/functors.h"
#include "tests/kernels/reference.h"

namespace weft::kernels {
namespace {

using testing::kRefBf16;
using testing::kRefE4M3;
using testing::kRefE5M2;
using testing::kRefHalf;
using testing::RefFormat;
using testing::refDecode;
using testing::refEncode;

struct Codec {
  const char* name;
  const RefFormat& format;
  int patterns;
  float (*decode)(uint32_t);
  uint32_t (*encode)(float);
};

const Codec kCodecs[] = {
    {"half", kRefHalf, 1 << 16, [](uint32_t b) { return halfToFloat(uint16_t(b)); },
     [](float f) -> uint32_t { return floatToHalf(f); }},
    {"bfloat16", kRefBf16, 1 << 16, [](uint32_t b) { return bf16ToFloat(uint16_t(b)); },
     [](float f) -> uint32_t { return floatToBf16(f); }},
    {"e4m3", kRefE4M3, 1 << 8, [](uint32_t b) { return e4m3ToFloat(uint8_t(b)); },
     [](float f) -> uint32_t { return floatToE4m3(f); }},
    {"e5m2", kRefE5M2, 1 << 8, [](uint32_t b) { return e5m2ToFloat(uint8_t(b)); },
     [](float f) -> uint32_t { return floatToE5m2(f); }},
};

uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }

TEST(KernelConversion, EveryPatternDecodesExactlyAndRoundTrips) {
  for (const Codec& c : kCodecs) {
    SCOPED_TRACE(c.name);
    const int topBit = c.format.expBits + c.format.manBits;
    for (int bits = 0; bits < c.patterns; ++bits) {
      const float f = c.decode(bits);
      const double want = refDecode(bits, c.format);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(f)) << bits;
        ASSERT_EQ(std::signbit(f), ((bits >> topBit) & 1) != 0) << bits;
        // Back to the narrow type it is still a NaN of the same sign.
        const uint32_t back = c.encode(f);
        ASSERT_TRUE(std::isnan(refDecode(back, c.format))) << bits;
        ASSERT_EQ(back >> topBit, uint32_t(bits) >> topBit) << bits;
        continue;
      }
      ASSERT_EQ(double(f), want) << bits;
      ASSERT_EQ(std::signbit(f), std::signbit(want)) << bits;
      if (std::isinf(want) && c.format.saturate) {
        // Saturating formats never produce infinity, even from infinity.
        ASSERT_EQ(c.encode(f), uint32_t(bits) - 1) << bits;
        continue;
      }
      ASSERT_EQ(c.encode(f), uint32_t(bits)) << bits;
    }
  }
}

TEST(KernelConversion, RandomFloatsRoundLikeTheReference) {
  std::mt19937 rng(12345);
  for (const Codec& c : kCodecs) {
    SCOPED_TRACE(c.name);
    for (int i = 0; i < 400000; ++i) {
      uint32_t raw = rng();
      // Half the draws near the format's range, where rounding matters most.
      if (i & 1) raw = (raw & 0x807fffffu) | (uint32_t(100 + rng() % 60) << 23);
      float f;
      std::memcpy(&f, &raw, 4);
      if (std::isnan(f)) continue;
      ASSERT_EQ(c.encode(f), refEncode(f, c.format)) << std::hex << raw;
    }
  }
}

TEST(KernelConversion, HalfTiesGoToEven) {
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);         // tie, 1.0 is even
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);     // tie, rounds up to even
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // just above the tie
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);                // subnormal tie to zero
  EXPECT_EQ(floatToHalf(3 * 0x1p-25f), 0x0002);            // subnormal tie up
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);                // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-14f - 0x1p-25f), 0x0400);     // tie across to the smallest normal
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);                // tie to even overflows to inf
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToHalf(std::bit_cast<float>(0x7fa02000u)), 0x7f01);  // NaN: payload kept, made quiet
}

TEST(KernelConversion, Bf16TiesGoToEven) {
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x00008000u)), 0x0000);  // float subnormal tie
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x00018000u)), 0x0002);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // float max rounds to inf
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0xff810000u)), 0xffc1);  // signalling NaN quietened
  EXPECT_EQ(bitsOf(bf16ToFloat(0x3f80)), 0x3f800000u);
}

TEST(KernelConversion, E4m3SaturatesAndHasOnlyOneNaN) {
  EXPECT_EQ(e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(e4m3ToFloat(0x78), 256.0f);  // exponent 1111 is a normal binade
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xff)));
  EXPECT_EQ(e4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(floatToE4m3(448.0f), 0x7e);
  EXPECT_EQ(floatToE4m3(464.0f), 0x7e);  // tie between 448 and the NaN slot goes to even 448
  EXPECT_EQ(floatToE4m3(480.0f), 0x7e);
  EXPECT_EQ(floatToE4m3(1e9f), 0x7e);
  EXPECT_EQ(floatToE4m3(INFINITY), 0x7e);
  EXPECT_EQ(floatToE4m3(-INFINITY), 0xfe);
  EXPECT_EQ(floatToE4m3(NAN), 0x7f);
  EXPECT_EQ(floatToE4m3(-NAN), 0xff);
  EXPECT_EQ(floatToE4m3(17.0f), 0x58);  // tie between 16 (even) and 18
  EXPECT_EQ(floatToE4m3(19.0f), 0x5a);  // tie between 18 and 20 (even)
  EXPECT_EQ(floatToE4m3(0x1p-10f), 0x00);      // half the smallest subnormal: tie to zero
  EXPECT_EQ(floatToE4m3(3 * 0x1p-10f), 0x02);  // tie to even subnormal
  EXPECT_EQ(floatToE4m3(-0x1p-9f), 0x81);
}

TEST(KernelConversion, E5m2SaturatesAndKeepsInfinityOnInput) {
  EXPECT_EQ(e5m2ToFloat(0x7b), 57344.0f);
  EXPECT_EQ(e5m2ToFloat(0x7c), INFINITY);
  EXPECT_EQ(e5m2ToFloat(0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(e5m2ToFloat(0x7d)));
  EXPECT_EQ(e5m2ToFloat(0x01), 0x1p-16f);
  EXPECT_EQ(floatToE5m2(57344.0f), 0x7b);
  EXPECT_EQ(floatToE5m2(61440.0f), 0x7b);  // would round to inf: saturated
  EXPECT_EQ(floatToE5m2(INFINITY), 0x7b);
  EXPECT_EQ(floatToE5m2(-INFINITY), 0xfb);
  EXPECT_TRUE(std::isnan(e5m2ToFloat(floatToE5m2(NAN))));
  EXPECT_EQ(floatToE5m2(1.125f), 0x3c);  // tie between 1.0 (even) and 1.25
  EXPECT_EQ(floatToE5m2(1.375f), 0x3e);  // tie between 1.25 and 1.5 (even)
  EXPECT_EQ(floatToE5m2(0x1p-17f), 0x00);
  EXPECT_EQ(floatToE5m2(0x1p-16f), 0x01);
}

}  // namespace
}  // namespace weft::kernels
