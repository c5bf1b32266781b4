// Independent references for the kernel tests: narrow floats decoded and
// rounded with plain double arithmetic (ldexp / nearbyint), never with the
// bit tricks the library uses.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "weft/weft.h"

namespace weft::kernels::testing {

struct RefFormat {
  int expBits;
  int manBits;
  bool ieeeSpecials;  // all-ones exponent = inf/NaN; otherwise only S.1..1 is NaN
  bool saturate;      // overflow gives +-max finite instead of inf
};
inline constexpr RefFormat kRefHalf{5, 10, true, false};
inline constexpr RefFormat kRefBf16{8, 7, true, false};
inline constexpr RefFormat kRefE4M3{4, 3, false, true};
inline constexpr RefFormat kRefE5M2{5, 2, true, true};

inline int refBias(const RefFormat& f) { return (1 << (f.expBits - 1)) - 1; }

inline double refMaxFinite(const RefFormat& f) {
  if (f.ieeeSpecials) return std::ldexp(2.0 - std::ldexp(1.0, -f.manBits), (1 << f.expBits) - 2 - refBias(f));
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - f.manBits), (1 << f.expBits) - 1 - refBias(f));
}

inline double refDecode(uint32_t bits, const RefFormat& f) {
  const uint32_t manMask = (1u << f.manBits) - 1, expMask = (1u << f.expBits) - 1;
  const bool negative = (bits >> (f.expBits + f.manBits)) & 1u;
  const uint32_t e = (bits >> f.manBits) & expMask, m = bits & manMask;
  double v;
  if (f.ieeeSpecials && e == expMask) v = m ? NAN : INFINITY;
  else if (!f.ieeeSpecials && e == expMask && m == manMask) v = NAN;
  else if (e == 0) v = std::ldexp(double(m), 1 - refBias(f) - f.manBits);
  else v = std::ldexp(1.0 + std::ldexp(double(m), -f.manBits), int(e) - refBias(f));
  return negative ? -v : v;
}

// Round-to-nearest-even of x into the format. NaN gives some NaN pattern.
inline uint32_t refEncode(double x, const RefFormat& f) {
  const uint32_t signBit = std::signbit(x) ? 1u << (f.expBits + f.manBits) : 0u;
  const uint32_t expMask = (1u << f.expBits) - 1;
  const uint32_t inf = expMask << f.manBits;
  if (std::isnan(x)) return signBit | (f.ieeeSpecials ? inf | (1u << (f.manBits - 1)) : inf | ((1u << f.manBits) - 1));
  const double maxFinite = refMaxFinite(f);
  const int emin = 1 - refBias(f);
  double a = std::fabs(x);
  double r = a;
  if (!std::isinf(a)) {
    const int e = a == 0 ? emin : std::max(std::ilogb(a), emin);
    const double quantum = std::ldexp(1.0, e - f.manBits);
    r = std::nearbyint(a / quantum) * quantum;  // default rounding mode: ties to even
  }
  if (r > maxFinite) {
    if (f.saturate) r = maxFinite;
    else return signBit | inf;
  }
  if (r < std::ldexp(1.0, emin)) return signBit | uint32_t(std::ldexp(r, f.manBits - emin));
  const int e = std::ilogb(r);
  const double mant = std::ldexp(r, -e) - 1.0;
  return signBit | (uint32_t(e + refBias(f)) << f.manBits) | uint32_t(std::ldexp(mant, f.manBits));
}

inline const RefFormat* refFormatOf(weftDataType_t type) {
  switch (type) {
    case weftFloat16: return &kRefHalf;
    case weftBfloat16: return &kRefBf16;
    case weftFloat8e4m3: return &kRefE4M3;
    case weftFloat8e5m2: return &kRefE5M2;
    default: return nullptr;
  }
}

}  // namespace weft::kernels::testing
