// Test data and reference results for collectives.
//
// Inputs are random (never zeros). The reference is computed in float64 (or
// exact wrapping integer arithmetic) from the decoded inputs; outputs are
// compared elementwise with a tolerance that follows from the type's unit
// roundoff and the number of roundings a ring can do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

inline size_t typeBytes(weftDataType_t t) {
  switch (t) {
    case weftInt8: case weftUint8: case weftFloat8e4m3: case weftFloat8e5m2: return 1;
    case weftFloat16: case weftBfloat16: return 2;
    case weftInt32: case weftUint32: case weftFloat32: return 4;
    default: return 8;
  }
}

inline bool isFloat(weftDataType_t t) {
  return t == weftFloat16 || t == weftBfloat16 || t == weftFloat32 || t == weftFloat64 || t == weftFloat8e4m3 ||
         t == weftFloat8e5m2;
}

inline bool isSigned(weftDataType_t t) { return t == weftInt8 || t == weftInt32 || t == weftInt64; }

// Decodes a narrow float (1 sign bit, E exponent bits, M mantissa bits).
inline double decodeNarrow(uint32_t bits, int E, int M, bool ieeeInf) {
  int sign = (bits >> (E + M)) & 1;
  int exp = (bits >> M) & ((1 << E) - 1);
  uint32_t man = bits & ((1u << M) - 1);
  int bias = (1 << (E - 1)) - 1;
  double v;
  if (exp == 0) v = std::ldexp(double(man), 1 - bias - M);
  else if (ieeeInf && exp == (1 << E) - 1) v = man ? NAN : INFINITY;
  else if (!ieeeInf && exp == (1 << E) - 1 && man == (1u << M) - 1) v = NAN;
  else v = std::ldexp(double(man | (1u << M)), exp - bias - M);
  return sign ? -v : v;
}

inline double unitRoundoff(weftDataType_t t) {
  switch (t) {
    case weftFloat16: return std::ldexp(1.0, -11);
    case weftBfloat16: return std::ldexp(1.0, -8);
    case weftFloat8e4m3: return std::ldexp(1.0, -4);
    case weftFloat8e5m2: return std::ldexp(1.0, -3);
    case weftFloat32: return std::ldexp(1.0, -24);
    default: return std::ldexp(1.0, -53);
  }
}

inline double smallestSubnormal(weftDataType_t t) {
  switch (t) {
    case weftFloat16: return std::ldexp(1.0, -24);
    case weftBfloat16: return std::ldexp(1.0, -133);
    case weftFloat8e4m3: return std::ldexp(1.0, -9);
    case weftFloat8e5m2: return std::ldexp(1.0, -16);
    default: return 0;
  }
}

// The value of element i of a buffer of type t, as a double.
inline double valueAt(const void* buf, size_t i, weftDataType_t t) {
  const auto* p = static_cast<const unsigned char*>(buf);
  switch (t) {
    case weftInt8: return double(int8_t(p[i]));
    case weftUint8: return double(p[i]);
    case weftFloat8e4m3: return decodeNarrow(p[i], 4, 3, false);
    case weftFloat8e5m2: return decodeNarrow(p[i], 5, 2, true);
    case weftFloat16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return decodeNarrow(v, 5, 10, true); }
    case weftBfloat16: { uint16_t v; memcpy(&v, p + 2 * i, 2); float f; uint32_t w = uint32_t(v) << 16; memcpy(&f, &w, 4); return f; }
    case weftInt32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case weftUint32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case weftFloat32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case weftInt64: { int64_t v; memcpy(&v, p + 8 * i, 8); return double(v); }
    case weftUint64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return double(v); }
    default: { double v; memcpy(&v, p + 8 * i, 8); return v; }
  }
}

// The raw bits of element i, for exact integer arithmetic.
inline uint64_t bitsAt(const void* buf, size_t i, size_t es) {
  uint64_t v = 0;
  memcpy(&v, static_cast<const unsigned char*>(buf) + i * es, es);
  return v;
}

// A small fast generator (the tests draw millions of values).
struct SplitMix {
  using result_type = uint64_t;
  uint64_t state;
  explicit SplitMix(uint64_t seed) : state(seed) {}
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~0ull; }
  uint64_t operator()() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * double((*this)() >> 11) * 0x1.0p-53; }
};

// Random finite values. Floats get a random sign and a magnitude in
// [lo, hi) drawn on the type's own grid (so inputs are exact); integers are
// uniform over the whole type (sums and products wrap).
inline void fillRandom(void* buf, size_t count, weftDataType_t t, SplitMix& rng, double lo = 0.25,
                       double hi = 4.0) {
  auto* p = static_cast<unsigned char*>(buf);
  const size_t es = typeBytes(t);
  for (size_t i = 0; i < count; i++) {
    if (!isFloat(t)) {
      uint64_t v = rng();
      memcpy(p + i * es, &v, es);
      continue;
    }
    double x = rng.uniform(lo, hi) * ((rng() & 1) ? -1 : 1);
    switch (t) {
      case weftFloat32: { float f = float(x); memcpy(p + 4 * i, &f, 4); break; }
      case weftFloat64: memcpy(p + 8 * i, &x, 8); break;
      default: {
        // Search the narrow type's bit patterns for the nearest value: cheap
        // for 8 bits, and 16-bit types use truncated float32 bits.
        if (t == weftBfloat16) {
          float f = float(x);
          uint32_t w;
          memcpy(&w, &f, 4);
          uint16_t b = uint16_t(w >> 16);
          memcpy(p + 2 * i, &b, 2);
        } else if (t == weftFloat16) {
          int e;
          double m = std::frexp(std::fabs(x), &e);  // x = m * 2^e, m in [0.5,1)
          uint32_t man = uint32_t((m * 2 - 1) * 1024);
          uint16_t h = uint16_t(((x < 0) << 15) | ((e - 1 + 15) << 10) | man);
          memcpy(p + 2 * i, &h, 2);
        } else {
          int E = t == weftFloat8e4m3 ? 4 : 5, M = t == weftFloat8e4m3 ? 3 : 2;
          int e;
          double m = std::frexp(std::fabs(x), &e);
          uint32_t man = uint32_t((m * 2 - 1) * (1 << M));
          int bias = (1 << (E - 1)) - 1;
          uint8_t b = uint8_t(((x < 0) << 7) | ((e - 1 + bias) << M) | man);
          p[i] = b;
        }
      }
    }
  }
}

// Reduces rank contributions of one element; returns the reference value
// (as double, exact for integers up to 2^53 — integers are compared by bits
// via reduceBits instead) and the tolerance for a float result.
struct FloatRef {
  double value;
  double tol;
};

inline FloatRef reduceFloat(const std::vector<double>& x, const std::vector<double>& scale, weftRedOp_t op,
                            weftDataType_t t) {
  const size_t n = x.size();
  const double u = unitRoundoff(t), tiny = smallestSubnormal(t);
  double r = 0, absSum = 0;
  switch (op) {
    case weftProd:
      r = 1;
      for (double v : x) r *= v;
      return {r, (n + 2) * u * std::fabs(r) + n * tiny};
    case weftMax:
      r = x[0];
      for (double v : x) r = std::max(r, v);
      return {r, 0};
    case weftMin:
      r = x[0];
      for (double v : x) r = std::min(r, v);
      return {r, 0};
    default:
      for (size_t k = 0; k < n; k++) {
        double s = op == weftSum || op == weftAvg ? 1.0 : scale[k];
        r += s * x[k];
        absSum += std::fabs(s * x[k]);
      }
      if (op == weftAvg) {
        r /= double(n);
        absSum /= double(n);
      }
      return {r, (n + 2) * u * absSum + (n + 2) * tiny};
  }
}

// Exact integer reduction with wrapping in `es` bytes.
inline uint64_t reduceBits(const std::vector<uint64_t>& x, const std::vector<uint64_t>& scale, weftRedOp_t op,
                           weftDataType_t t) {
  const size_t es = typeBytes(t);
  const int bits = int(es * 8);
  const uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  auto sext = [&](uint64_t v) -> int64_t {
    if (bits == 64) return int64_t(v);
    uint64_t sign = 1ull << (bits - 1);
    return int64_t((v ^ sign) - sign);
  };
  uint64_t r = 0;
  switch (op) {
    case weftProd:
      r = 1;
      for (uint64_t v : x) r *= v;
      return r & mask;
    case weftMax:
    case weftMin: {
      r = x[0];
      for (uint64_t v : x) {
        bool less = isSigned(t) ? sext(v & mask) < sext(r & mask) : (v & mask) < (r & mask);
        if ((op == weftMin) == less) r = v;
      }
      return r & mask;
    }
    default:
      for (size_t k = 0; k < x.size(); k++) r += (op == weftSum || op == weftAvg ? 1 : scale[k]) * x[k];
      r &= mask;
      if (op == weftAvg) {
        if (isSigned(t)) r = uint64_t(sext(r) / int64_t(x.size())) & mask;
        else r = r / x.size();
      }
      return r;
  }
}

}  // namespace weft::test
