// The host reduction loops, written once and compiled once per SIMD level.
//
// No include guard on purpose: each loops_<level>.cc defines
//   WEFT_SIMD_NS     the namespace its instantiations live in
//   WEFT_SIMD_BYTES  the vector width in bytes (0: scalar only)
//   WEFT_SIMD_NAME   the level's name for logs
//   WEFT_SIMD_GETTER the function that returns its table
// and includes this file once, compiled with that level's -m flags. Everything
// below has internal linkage, so the per-level copies never meet at link time.
//
// A vector step and the scalar tail run the same functors (functors.h) on a
// GCC vector or on one value, so results do not depend on the level or on
// where an element falls; the one level-specific path, F16C for half, rounds
// exactly as the generic conversion does (checked by the tests).
#include <cstring>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "src/kernels/functors.h"
#include "src/kernels/loop_table.h"

namespace weft::kernels {
namespace WEFT_SIMD_NS {
namespace {

constexpr size_t kVecBytes = WEFT_SIMD_BYTES;

template <class T, size_t N>
struct VecOf {
  typedef T type __attribute__((vector_size(N * sizeof(T))));
};
template <class T, size_t N>
using Vec = typename VecOf<T, N>::type;

// The lanes trait functors.h's conversions need, for N float lanes.
template <size_t N>
struct VecLanes {
  using F = Vec<float, N>;
  using U = Vec<uint32_t, N>;
  static WEFT_FN U splat(uint32_t v) { return U{} + v; }
  static WEFT_FN U asBits(F x) { return (U)x; }
  static WEFT_FN F asFloat(U u) { return (F)u; }
};

template <class Fmt>
const float* fp8Table() {
  static const struct Table {
    float values[256];
    Table() {
      for (uint32_t bits = 0; bits < 256; ++bits) values[bits] = decodeNarrow<Fmt, ScalarLanes>(bits);
    }
  } table;
  return table.values;
}

template <class E, size_t N>
WEFT_FN Vec<typename E::Acc, N> loadVec(const typename E::Store* p) {
  using A = typename E::Acc;
  if constexpr (!E::kNarrow) {
    Vec<A, N> v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
#if defined(__F16C__)
    if constexpr (std::is_same_v<typename E::Format, HalfFormat> && N == 4)
      return (Vec<float, 4>)_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    if constexpr (std::is_same_v<typename E::Format, HalfFormat> && N == 8)
      return (Vec<float, 8>)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<typename E::Format, HalfFormat> && N == 16)
      // The maskz forms: GCC 12's unmasked wrappers trip -Wmaybe-uninitialized.
      return (Vec<float, 16>)_mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#endif
#endif
    Vec<typename E::Store, N> raw;
    std::memcpy(&raw, p, sizeof raw);
    if constexpr (sizeof(typename E::Store) == 1) {
      // fp8: 256 possible inputs, so a table of the scalar decoder's results
      // beats the bit manipulation and is identical by construction.
      const float* table = fp8Table<typename E::Format>();
      Vec<float, N> v;
      for (size_t i = 0; i < N; ++i) v[i] = table[raw[i]];
      return v;
    }
    return decodeNarrow<typename E::Format, VecLanes<N>>(__builtin_convertvector(raw, Vec<uint32_t, N>));
  }
}

template <class E, size_t N>
WEFT_FN void storeVec(typename E::Store* p, Vec<typename E::Acc, N> v) {
  if constexpr (!E::kNarrow) {
    std::memcpy(p, &v, sizeof v);
  } else {
#if defined(__F16C__)
    if constexpr (std::is_same_v<typename E::Format, HalfFormat> && N == 4) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_cvtps_ph((__m128)v, _MM_FROUND_TO_NEAREST_INT));
      return;
    }
    if constexpr (std::is_same_v<typename E::Format, HalfFormat> && N == 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT));
      return;
    }
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<typename E::Format, HalfFormat> && N == 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtps_ph(0xffff, (__m512)v, _MM_FROUND_TO_NEAREST_INT));
      return;
    }
#endif
#endif
    const auto raw = __builtin_convertvector(encodeNarrow<typename E::Format, VecLanes<N>>(v),
                                             Vec<typename E::Store, N>);
    std::memcpy(p, &raw, sizeof raw);
  }
}

template <class E>
typename E::Acc scalarOf(const RedOp& op) {
  typename E::Store s;
  std::memcpy(&s, op.scalar, sizeof s);
  return loadElem<E>(s);
}

template <class E, class C>
WEFT_FN C preMul(C x, typename E::Acc scale) {
  return C(x * scale);
}

template <class E, class C>
WEFT_FN C postDiv(C x, int nranks) {
  if constexpr (std::is_same_v<C, typename E::Acc>) {
    return avgDivide<E>(x, nranks);
  } else if constexpr (E::kIsFloat) {
    return x / (typename E::Acc)nranks;
  } else {
    // No SIMD integer division on x86; this runs once per element of the
    // final step only.
    for (size_t i = 0; i < sizeof(C) / sizeof(typename E::Acc); ++i) x[i] = avgDivide<E>(x[i], nranks);
    return x;
  }
}

template <class E, class Op, bool Pre, bool Post>
void reduceLoop(void* dstv, const void* av, const void* bv, size_t n, const RedOp& op) {
  using S = typename E::Store;
  using A = typename E::Acc;
  S* dst = static_cast<S*>(dstv);
  const S* a = static_cast<const S*>(av);
  const S* b = static_cast<const S*>(bv);
  A scale{};
  if constexpr (Pre) scale = scalarOf<E>(op);
  const int nranks = op.nranks;
  size_t i = 0;
  if constexpr (kVecBytes > 0) {
    constexpr size_t N = kVecBytes / sizeof(A);
    using VA = Vec<A, N>;
    // Both inputs are loaded before the store, so dst == a or dst == b is safe.
    for (; i + N <= n; i += N) {
      const VA x = loadVec<E, N>(a + i);
      VA y = loadVec<E, N>(b + i);
      if constexpr (Pre) y = preMul<E>(y, scale);
      VA r = Op::apply(x, y);
      if constexpr (Post) r = postDiv<E>(r, nranks);
      storeVec<E, N>(dst + i, r);
    }
  }
  for (; i < n; ++i) {
    const A x = loadElem<E>(a[i]);
    A y = loadElem<E>(b[i]);
    if constexpr (Pre) y = preMul<E>(y, scale);
    A r = Op::apply(x, y);
    if constexpr (Post) r = postDiv<E>(r, nranks);
    dst[i] = storeElem<E>(r);
  }
}

template <class E, bool Pre, bool Post>
void transformLoop(void* dstv, const void* srcv, size_t n, const RedOp& op) {
  using S = typename E::Store;
  using A = typename E::Acc;
  S* dst = static_cast<S*>(dstv);
  const S* src = static_cast<const S*>(srcv);
  A scale{};
  if constexpr (Pre) scale = scalarOf<E>(op);
  const int nranks = op.nranks;
  size_t i = 0;
  if constexpr (kVecBytes > 0) {
    constexpr size_t N = kVecBytes / sizeof(A);
    using VA = Vec<A, N>;
    for (; i + N <= n; i += N) {
      VA x = loadVec<E, N>(src + i);
      if constexpr (Pre) x = preMul<E>(x, scale);
      if constexpr (Post) x = postDiv<E>(x, nranks);
      storeVec<E, N>(dst + i, x);
    }
  }
  for (; i < n; ++i) {
    A x = loadElem<E>(src[i]);
    if constexpr (Pre) x = preMul<E>(x, scale);
    if constexpr (Post) x = postDiv<E>(x, nranks);
    dst[i] = storeElem<E>(x);
  }
}

template <int T>
constexpr void fillType(LoopTable& t) {
  using E = Elem<T>;
  t.reduce[T][kRedSum] = &reduceLoop<E, FuncSum<E>, false, false>;
  t.reduce[T][kRedProd] = &reduceLoop<E, FuncProd<E>, false, false>;
  t.reduce[T][kRedMax] = &reduceLoop<E, FuncMax<E>, false, false>;
  t.reduce[T][kRedMin] = &reduceLoop<E, FuncMin<E>, false, false>;
  t.reduce[T][kRedSumPostDiv] = &reduceLoop<E, FuncSum<E>, false, true>;
  t.reduce[T][kRedPreMulSum] = &reduceLoop<E, FuncSum<E>, true, false>;
  t.transform[T][kXformPostDiv] = &transformLoop<E, false, true>;
  t.transform[T][kXformPreMul] = &transformLoop<E, true, false>;
}

constexpr LoopTable makeTable() {
  LoopTable t{};
  t.name = WEFT_SIMD_NAME;
  fillType<weftInt8>(t);
  fillType<weftUint8>(t);
  fillType<weftInt32>(t);
  fillType<weftUint32>(t);
  fillType<weftInt64>(t);
  fillType<weftUint64>(t);
  fillType<weftFloat16>(t);
  fillType<weftFloat32>(t);
  fillType<weftFloat64>(t);
  fillType<weftBfloat16>(t);
  fillType<weftFloat8e4m3>(t);
  fillType<weftFloat8e5m2>(t);
  return t;
}

constexpr LoopTable kTable = makeTable();

}  // namespace
}  // namespace WEFT_SIMD_NS

const LoopTable* WEFT_SIMD_GETTER() { return &WEFT_SIMD_NS::kTable; }

}  // namespace weft::kernels
