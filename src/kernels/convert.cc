#include "src/kernels/convert.h"

#include <cstdint>
#include <cstring>

#include "src/kernels/functors.h"
#include "src/kernels/reduce.h"
#include "src/util/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace weft::kernels {
namespace {

// bfloat16 is the top half of a float32: rounding to nearest even is one
// add on the bit pattern (NaNs keep their sign and top payload and are made
// quiet, as floatToBf16 does), simple enough for the compiler to vectorise.
inline uint16_t bf16Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quietNan = (u >> 16) | 0x40u;
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);  // a select, no branch
}

inline float bf16Value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

#if defined(__x86_64__)
// float16 with the CPU's F16C conversions (round to nearest even, NaNs made
// quiet, overflow to infinity: what floatToHalf does), 8 at a time.
__attribute__((target("avx,f16c"))) void toHalfF16c(uint16_t* out, const float* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) out[i] = floatToHalf(in[i]);
}
__attribute__((target("avx,f16c"))) void fromHalfF16c(float* out, const uint16_t* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; i++) out[i] = halfToFloat(in[i]);
}
bool hasF16c() {
  static const bool yes = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return yes;
}
#endif

}  // namespace

void floatToNarrow(void* dst, const float* src, size_t count, weftDataType_t narrow) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  if (narrow == weftBfloat16) {
    for (size_t i = 0; i < count; i++) out[i] = bf16Bits(src[i]);
  } else if (narrow == weftFloat16) {
#if defined(__x86_64__)
    if (hasF16c()) return toHalfF16c(out, src, count);
#endif
    for (size_t i = 0; i < count; i++) out[i] = floatToHalf(src[i]);
  } else {
    raise(weftInternalError, "floatToNarrow: %s is not a narrow wire format", typeName(narrow));
  }
}

void narrowToFloat(float* dst, const void* src, size_t count, weftDataType_t narrow) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  if (narrow == weftBfloat16) {
    for (size_t i = 0; i < count; i++) dst[i] = bf16Value(in[i]);
  } else if (narrow == weftFloat16) {
#if defined(__x86_64__)
    if (hasF16c()) return fromHalfF16c(dst, in, count);
#endif
    for (size_t i = 0; i < count; i++) dst[i] = halfToFloat(in[i]);
  } else {
    raise(weftInternalError, "narrowToFloat: %s is not a narrow wire format", typeName(narrow));
  }
}

}  // namespace weft::kernels
