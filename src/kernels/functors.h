// Per-element reduction arithmetic, shared by the host loops and (later) the
// CUDA kernels. Everything here must compile as host C++ and as CUDA device
// code: no std::, no intrinsics, no exceptions.
//
// The narrow-float conversions are written once, generic over a "lanes"
// trait L (L::F a float value, L::U its bits, L::asBits/asFloat/splat), and
// use only operators and `mask ? x : y`. With ScalarLanes they are plain
// scalar code; the host SIMD loops instantiate them with GCC vector types, so
// the vector path computes bit for bit what the scalar path computes.
//
// Rounding: float32 -> narrow is round-to-nearest-even. Non-saturating
// formats (half, bfloat16) overflow to infinity. The fp8 formats saturate as
// NVIDIA's __NV_SATFINITE conversions (which NCCL uses) do: any finite or
// infinite magnitude above the largest finite value becomes +-max
// (e4m3: 448, e5m2: 57344); NaN stays NaN. A NaN keeps its sign and top
// payload bits and is made quiet (as x86 F16C does for half).
#pragma once

#include <stdint.h>

#include "weft/weft.h"

#if defined(__CUDACC__)
#define WEFT_HOST_DEVICE __host__ __device__
#define WEFT_FN __host__ __device__ __forceinline__
#else
#define WEFT_HOST_DEVICE
// always_inline: the host loops are compiled once per SIMD level, and an
// out-of-line copy of these helpers built for one level must never be
// picked up by another.
#define WEFT_FN inline __attribute__((always_inline))
#endif

namespace weft::kernels {

// A binary float format with 1 sign bit, E exponent bits and M mantissa bits.
// IeeeSpecials: the all-ones exponent encodes infinity/NaN (half, bf16, e5m2);
// otherwise only S.1111.111 is NaN and there is no infinity (e4m3).
template <int E, int M, bool IeeeSpecials, bool Saturate>
struct NarrowFormat {
  static constexpr int kExpBits = E;
  static constexpr int kManBits = M;
  static constexpr uint32_t kBias = (1u << (E - 1)) - 1;
  static constexpr bool kIeeeSpecials = IeeeSpecials;
  static constexpr bool kSaturate = Saturate;
  static constexpr uint32_t kMagMask = (1u << (E + M)) - 1;
  static constexpr uint32_t kManMask = (1u << M) - 1;
  static constexpr uint32_t kInf = ((1u << E) - 1) << M;
  static constexpr uint32_t kMaxFinite = IeeeSpecials ? kInf - 1 : kMagMask - 1;
};
using HalfFormat = NarrowFormat<5, 10, true, false>;
using Bf16Format = NarrowFormat<8, 7, true, false>;
using E4M3Format = NarrowFormat<4, 3, false, true>;
using E5M2Format = NarrowFormat<5, 2, true, true>;

struct ScalarLanes {
  using F = float;
  using U = uint32_t;
  static WEFT_FN U splat(uint32_t v) { return v; }
  static WEFT_FN U asBits(F x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    return __builtin_bit_cast(U, x);
#endif
  }
  static WEFT_FN F asFloat(U u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    return __builtin_bit_cast(F, u);
#endif
  }
};

// Narrow bits (zero-extended into a 32-bit lane) -> float32. Exact.
template <class Fmt, class L>
WEFT_FN typename L::F decodeNarrow(typename L::U bits) {
  using U = typename L::U;
  // bfloat16 is the top half of a float32; its NaNs are quietened on the way
  // back (encodeNarrow), so nothing is lost by not doing it here.
  if constexpr (Fmt::kExpBits == 8) return L::asFloat(bits << 16);
  constexpr int kShift = 23 - Fmt::kManBits;
  constexpr uint32_t kRebias = (127 - Fmt::kBias) << 23;
  const U sign = (bits >> (Fmt::kExpBits + Fmt::kManBits)) << 31;
  const U shifted = (bits & Fmt::kMagMask) << kShift;
  U r = shifted + kRebias;
  if constexpr (Fmt::kExpBits < 8) {
    // A subnormal is (2^emin * 1.m) - 2^emin, both terms normal floats, so
    // the subtraction is exact and never touches float denormals.
    const U sub = L::asBits(L::asFloat(r + (1u << 23)) - L::asFloat(L::splat((128 - Fmt::kBias) << 23)));
    r = ((shifted & 0x7f800000u) == 0u) ? sub : r;
  }
  const U special = shifted | 0x7f800000u;
  const U nanBits = special | 0x400000u;
  if constexpr (Fmt::kIeeeSpecials) {
    const auto isSpecial = shifted >= L::splat(Fmt::kInf << kShift);
    r = isSpecial ? ((special > L::splat(0x7f800000u)) ? nanBits : special) : r;
  } else {
    r = ((bits & Fmt::kMagMask) == Fmt::kMagMask) ? nanBits : r;
  }
  return L::asFloat(r | sign);
}

// float32 -> narrow bits (in the low bits of a 32-bit lane), RNE.
template <class Fmt, class L>
WEFT_FN typename L::U encodeNarrow(typename L::F x) {
  using U = typename L::U;
  if constexpr (Fmt::kExpBits == 8) {
    // Same exponent as float32: round the whole pattern, sign included; a
    // carry out of the largest finite value lands exactly on infinity.
    const U all = L::asBits(x);
    const U rounded = (all + 0x7fffu + ((all >> 16) & 1u)) >> 16;
    return ((all & 0x7fffffffu) > L::splat(0x7f800000u)) ? ((all >> 16) | 0x40u) : rounded;
  }
  constexpr int kShift = 23 - Fmt::kManBits;
  constexpr uint32_t kRebias = (127 - Fmt::kBias) << 23;
  U f = L::asBits(x);
  const U sign = f & 0x80000000u;
  f = f ^ sign;
  // Round on the bit pattern: add just under half an ulp, plus one when the
  // kept lowest bit is odd, so exact ties go to even.
  const U odd = (f >> kShift) & 1u;
  U r = (f - kRebias + ((1u << (kShift - 1)) - 1u) + odd) >> kShift;
  if constexpr (Fmt::kExpBits < 8) {
    // Below the smallest normal, let the FPU round: adding a power of two
    // whose ulp is the smallest narrow subnormal leaves the rounded count of
    // subnormal steps in the low mantissa bits.
    constexpr uint32_t kMinNormal = (128 - Fmt::kBias) << 23;
    constexpr uint32_t kMagic = (151 - Fmt::kBias - Fmt::kManBits) << 23;
    const U sub = L::asBits(L::asFloat(f) + L::asFloat(L::splat(kMagic))) - kMagic;
    r = (f < L::splat(kMinNormal)) ? sub : r;
  }
  const U overflow = Fmt::kSaturate ? L::splat(Fmt::kMaxFinite) : L::splat(Fmt::kInf);
  r = (r > L::splat(Fmt::kMaxFinite)) ? overflow : r;
  U nan = L::splat(Fmt::kMagMask);
  if constexpr (Fmt::kIeeeSpecials) nan = Fmt::kInf | (1u << (Fmt::kManBits - 1)) | ((f >> kShift) & Fmt::kManMask);
  r = (f > L::splat(0x7f800000u)) ? nan : r;
  return r | (sign >> (31 - Fmt::kExpBits - Fmt::kManBits));
}

WEFT_FN float halfToFloat(uint16_t h) { return decodeNarrow<HalfFormat, ScalarLanes>(h); }
WEFT_FN uint16_t floatToHalf(float f) { return (uint16_t)encodeNarrow<HalfFormat, ScalarLanes>(f); }
WEFT_FN float bf16ToFloat(uint16_t h) { return decodeNarrow<Bf16Format, ScalarLanes>(h); }
WEFT_FN uint16_t floatToBf16(float f) { return (uint16_t)encodeNarrow<Bf16Format, ScalarLanes>(f); }
WEFT_FN float e4m3ToFloat(uint8_t v) { return decodeNarrow<E4M3Format, ScalarLanes>(v); }
WEFT_FN uint8_t floatToE4m3(float f) { return (uint8_t)encodeNarrow<E4M3Format, ScalarLanes>(f); }
WEFT_FN float e5m2ToFloat(uint8_t v) { return decodeNarrow<E5M2Format, ScalarLanes>(v); }
WEFT_FN uint8_t floatToE5m2(float f) { return (uint8_t)encodeNarrow<E5M2Format, ScalarLanes>(f); }

// ---- Element types --------------------------------------------------------
// Store: the bits in memory. Acc: what the arithmetic runs in. Integers run
// in the unsigned type of their width (so Sum/Prod wrap without UB); kSignFlip
// turns an unsigned compare into a signed one for Max/Min. Narrow floats run
// in float32 and name their Format.

struct NoFormat {};

template <class S, class A, bool IsFloat, A SignFlip, class Fmt = NoFormat>
struct ElemDesc {
  using Store = S;
  using Acc = A;
  using Format = Fmt;
  static constexpr bool kIsFloat = IsFloat;
  static constexpr bool kNarrow = sizeof(S) < sizeof(A) && IsFloat;
  static constexpr A kSignFlip = SignFlip;
  static constexpr bool kSigned = SignFlip != A(0);
};

template <int Type>
struct Elem;
template <> struct Elem<weftInt8> : ElemDesc<uint8_t, uint8_t, false, 0x80u> {};
template <> struct Elem<weftUint8> : ElemDesc<uint8_t, uint8_t, false, 0u> {};
template <> struct Elem<weftInt32> : ElemDesc<uint32_t, uint32_t, false, 0x80000000u> {};
template <> struct Elem<weftUint32> : ElemDesc<uint32_t, uint32_t, false, 0u> {};
template <> struct Elem<weftInt64> : ElemDesc<uint64_t, uint64_t, false, 0x8000000000000000ull> {};
template <> struct Elem<weftUint64> : ElemDesc<uint64_t, uint64_t, false, 0ull> {};
template <> struct Elem<weftFloat16> : ElemDesc<uint16_t, float, true, 0.0f, HalfFormat> {};
template <> struct Elem<weftFloat32> : ElemDesc<float, float, true, 0.0f> {};
template <> struct Elem<weftFloat64> : ElemDesc<double, double, true, 0.0> {};
template <> struct Elem<weftBfloat16> : ElemDesc<uint16_t, float, true, 0.0f, Bf16Format> {};
template <> struct Elem<weftFloat8e4m3> : ElemDesc<uint8_t, float, true, 0.0f, E4M3Format> {};
template <> struct Elem<weftFloat8e5m2> : ElemDesc<uint8_t, float, true, 0.0f, E5M2Format> {};

// One element from memory into the accumulation type, and back.
template <class E>
WEFT_FN typename E::Acc loadElem(typename E::Store s) {
  if constexpr (E::kNarrow) return decodeNarrow<typename E::Format, ScalarLanes>(s);
  else return s;
}
template <class E>
WEFT_FN typename E::Store storeElem(typename E::Acc a) {
  if constexpr (E::kNarrow) return (typename E::Store)encodeNarrow<typename E::Format, ScalarLanes>(a);
  else return a;
}

// ---- Ops ------------------------------------------------------------------
// Each works on one value of E::Acc or on a host SIMD vector of them (C),
// using only operators and `mask ? x : y`.

template <class E>
struct FuncSum {
  template <class C>
  static WEFT_FN C apply(C a, C b) { return C(a + b); }
};

template <class E>
struct FuncProd {
  template <class C>
  static WEFT_FN C apply(C a, C b) { return C(a * b); }
};

// Float Max/Min propagate NaN: a NaN in either input gives a NaN (a's when
// both are NaN). Equal values (+0 / -0) give b, as x86 maxps/minps do.
template <class E>
struct FuncMax {
  template <class C>
  static WEFT_FN C apply(C a, C b) {
    if constexpr (E::kIsFloat) return ((a != a) | (a > b)) ? a : b;
    else return C(a ^ E::kSignFlip) > C(b ^ E::kSignFlip) ? a : b;
  }
};

template <class E>
struct FuncMin {
  template <class C>
  static WEFT_FN C apply(C a, C b) {
    if constexpr (E::kIsFloat) return ((a != a) | (a < b)) ? a : b;
    else return C(a ^ E::kSignFlip) < C(b ^ E::kSignFlip) ? a : b;
  }
};

// Avg's final step on one value. Integers divide the wrapped sum (as the
// signed value for signed types) with truncation toward zero; floats divide
// in the accumulation type.
template <class E>
WEFT_FN typename E::Acc avgDivide(typename E::Acc x, int nranks) {
  using A = typename E::Acc;
  if constexpr (E::kIsFloat) {
    return x / (A)nranks;
  } else if constexpr (E::kSigned) {
    // Reinterpret as two's complement, widen, divide.
    int64_t v = (int64_t)x;
    if constexpr (sizeof(A) < 8) v = (x & E::kSignFlip) ? v - 2 * (int64_t)E::kSignFlip : v;
    return (A)(uint64_t)(v / (int64_t)nranks);
  } else {
    return (A)((uint64_t)x / (uint64_t)nranks);
  }
}

}  // namespace weft::kernels
