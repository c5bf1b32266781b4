// Device arithmetic for one stretch of elements: what the host executor's
// compute() does with kernels::reduce/transform, element for element, using
// the shared functors (functors.h). Rounding of narrow floats happens at the
// same points as on the host (the intermediate of a two-input reduce is
// stored once), so device and host results agree bit for bit.
//
// Inputs that come from FIFO slots are read with loadSlot/loadSlotVec
// (device_portable.cuh): a slot is rewritten by another agent while the
// kernel runs, so a cached copy must never be used. 16-byte loads and
// stores when every pointer allows it, issued kUnroll deep per thread so
// that each thread has several loads in flight before it uses one.
#pragma once

#include <stdint.h>

#include "src/exec/cuda/device_portable.cuh"
#include "src/kernels/functors.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>
#endif

namespace weft::cuda {

enum DevOpKind : int32_t { kOpSum = 0, kOpProd = 1, kOpMax = 2, kOpMin = 3, kOpAvg = 4, kOpPreMulSum = 5 };

// 16-byte loads in flight per thread in the aligned loops, each thread
// issuing all of them before it uses one. Three loops, so that no register
// holds an input a piece does not have:
// * plain copies (one input, bits moved untouched: AllGather, Broadcast,
//   the last pass of a ring AllReduce): kCopyUnroll vectors;
// * reductions of a FIFO input with the local buffer (ring reduce) or two
//   FIFO inputs with or without it (trees): kReduceUnroll vectors per input,
//   the input shape a template parameter;
// * anything else (scaling only, Avg of one input): kUnroll per input.
// The generic loop's depth is what ptxas (sm_90, 512 threads, 128
// registers) compiled without spills at the time it was written; the leaner
// loops' register use is reported in docs/cuda.md; none of the depths is
// measured for speed on a GPU yet.
constexpr int kUnroll = 2;
constexpr int kCopyUnroll = 8;
constexpr int kReduceUnroll = 4;

template <class E>
struct PieceIo {
  using S = typename E::Store;
  using A = typename E::Acc;
  const S* in[2];   // FIFO inputs (volatile)
  const S* local;   // user/scratch input, or null
  S* out[3];        // every output receives the same result
  int nIn;
  int nOut;
  bool pre;         // multiply local by scale (PreMulSum)
  bool post;        // divide by nranks (Avg)
  bool native;      // half2/bfloat162 instructions allowed (DevArith::kArithNative)
  A scale;
  int nranks;
};

template <class E, class Op>
WEFT_DEV typename E::Acc combine(const PieceIo<E>& io, typename E::Store i0, typename E::Store i1,
                                 typename E::Store l) {
  using namespace weft::kernels;
  using A = typename E::Acc;
  A r;
  if (io.nIn == 0) {
    r = loadElem<E>(l);
    if (io.pre) r = A(r * io.scale);
  } else {
    r = loadElem<E>(i0);
    if (io.nIn == 2) {
      r = Op::apply(r, loadElem<E>(i1));
      // The host stores this intermediate before reducing the local input.
      if (io.local) r = loadElem<E>(storeElem<E>(r));
    }
    if (io.local) {
      A y = loadElem<E>(l);
      if (io.pre) y = A(y * io.scale);
      r = Op::apply(r, y);
    }
  }
  if (io.post) r = avgDivide<E>(r, io.nranks);
  return r;
}

// A plain copy (one input, nothing to apply): bits move untouched, as the
// host's memcpy does (NaN payloads included).
template <class E>
WEFT_DEV bool isRawCopy(const PieceIo<E>& io) {
  return (io.nIn + (io.local ? 1 : 0)) == 1 && !io.post && !(io.pre && io.nIn == 0);
}

#if defined(__CUDA_ARCH__)
// Sum and Prod of float16/bfloat16 pairs with the native instructions. For
// finite values they round exactly as combine() does: every operation is
// rounded to the narrow type once in both, and a float32 intermediate of two
// narrow operands rounds to the same narrow value (24 >= 2 * 11 + 2 bits).
// NaN payloads and infinities of opposite signs may differ, hence a setting.
template <class E, class Op>
__device__ __forceinline__ bool combineNative(const PieceIo<E>& io, const Vec16& a, const Vec16& b, const Vec16& l,
                                              Vec16& r) {
  constexpr bool kNarrow16 = E::kNarrow && sizeof(typename E::Store) == 2;
  if constexpr (!kNarrow16) {
    return false;
  } else {
    constexpr bool kSum = __is_same(Op, weft::kernels::FuncSum<E>);
    constexpr bool kProd = __is_same(Op, weft::kernels::FuncProd<E>);
    if constexpr (!kSum && !kProd) {
      return false;
    } else {
      if (!io.native || io.pre || io.post || io.nIn == 0) return false;
      using F = typename E::Format;
      using P = std::conditional_t<__is_same(F, weft::kernels::HalfFormat), __half2, __nv_bfloat162>;
      const P* pa = reinterpret_cast<const P*>(&a);
      const P* pb = reinterpret_cast<const P*>(&b);
      const P* pl = reinterpret_cast<const P*>(&l);
      P* pr = reinterpret_cast<P*>(&r);
#pragma unroll
      for (int k = 0; k < 4; k++) {
        P x = pa[k];
        if (io.nIn == 2) x = kSum ? __hadd2(x, pb[k]) : __hmul2(x, pb[k]);
        if (io.local) x = kSum ? __hadd2(x, pl[k]) : __hmul2(x, pl[k]);
        pr[k] = x;
      }
      return true;
    }
  }
}
#endif

template <class E, class Op>
WEFT_DEV Vec16 combineVec(const PieceIo<E>& io, bool raw, const Vec16& a, const Vec16& b, const Vec16& l) {
  using S = typename E::Store;
  constexpr int N = 16 / sizeof(S);
  if (raw) return io.nIn ? a : l;
  union U16 {
    Vec16 v;
    S s[N];
  } ua, ub, ul, ur;
#if defined(__CUDA_ARCH__)
  if (combineNative<E, Op>(io, a, b, l, ur.v)) return ur.v;
#endif
  ua.v = a;
  ub.v = b;
  ul.v = l;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < N; k++) ur.s[k] = weft::kernels::storeElem<E>(combine<E, Op>(io, ua.s[k], ub.s[k], ul.s[k]));
  return ur.v;
}

// Vectors [v0, v0 + U * nthreads) of the piece: thread tid takes
// v0 + tid + k * nthreads (neighbouring threads, neighbouring vectors), all
// loads first. kIn/kLocal: the inputs the piece has, known at compile time
// (-1: read io.nIn / io.local at run time, for the generic loop).
template <class E, class Op, int U, int kIn, int kLocal>
WEFT_DEV void computeUnrolled(const PieceIo<E>& io, bool raw, uint64_t v0, uint64_t tid, uint64_t nthreads) {
  const int nIn = kIn >= 0 ? kIn : io.nIn;
  const bool local = kLocal >= 0 ? kLocal != 0 : io.local != nullptr;
  Vec16 a[U], b[U], l[U];
  const Vec16* in0 = reinterpret_cast<const Vec16*>(io.in[0]);
  const Vec16* in1 = reinterpret_cast<const Vec16*>(io.in[1]);
  const Vec16* loc = reinterpret_cast<const Vec16*>(io.local);
  const Vec16 zero{};
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < U; k++) {
    const uint64_t v = v0 + tid + k * nthreads;
    a[k] = nIn > 0 ? loadSlotVec(in0 + v) : zero;
    b[k] = nIn > 1 ? loadSlotVec(in1 + v) : zero;
    l[k] = local ? loc[v] : zero;
  }
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < U; k++) {
    const Vec16 r = combineVec<E, Op>(io, raw, a[k], b[k], l[k]);
    const uint64_t v = v0 + tid + k * nthreads;
    for (int o = 0; o < io.nOut; o++) reinterpret_cast<Vec16*>(io.out[o])[v] = r;
  }
}

// A plain copy's vectors [v0, v0 + kCopyUnroll * nthreads): only the one
// input is held, from a FIFO slot (uncached loads) or the local buffer.
template <bool kFromSlot>
WEFT_DEV void copyUnrolled(const Vec16* src, Vec16* const* out, int nOut, uint64_t v0, uint64_t tid,
                           uint64_t nthreads) {
  Vec16 x[kCopyUnroll];
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < kCopyUnroll; k++) {
    const uint64_t v = v0 + tid + k * nthreads;
    x[k] = kFromSlot ? loadSlotVec(src + v) : src[v];
  }
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < kCopyUnroll; k++) {
    const uint64_t v = v0 + tid + k * nthreads;
    for (int o = 0; o < nOut; o++) out[o][v] = x[k];
  }
}

// The unrolled part of an aligned piece of nv vectors; returns the first
// vector it left to the one-vector loop.
template <class E, class Op>
WEFT_DEV uint64_t computeVectorsUnrolled(const PieceIo<E>& io, bool raw, uint64_t nv, uint64_t tid,
                                         uint64_t nthreads) {
  uint64_t v0 = 0;
  if (raw) {
    Vec16* out[3];
    for (int o = 0; o < io.nOut; o++) out[o] = reinterpret_cast<Vec16*>(io.out[o]);
    const uint64_t span = nthreads * kCopyUnroll;
    if (io.nIn) {
      const Vec16* src = reinterpret_cast<const Vec16*>(io.in[0]);
      for (; v0 + span <= nv; v0 += span) copyUnrolled<true>(src, out, io.nOut, v0, tid, nthreads);
    } else {
      const Vec16* src = reinterpret_cast<const Vec16*>(io.local);
      for (; v0 + span <= nv; v0 += span) copyUnrolled<false>(src, out, io.nOut, v0, tid, nthreads);
    }
    return v0;
  }
  const uint64_t deep = nthreads * kReduceUnroll;
  if (io.nIn == 1 && io.local) {
    for (; v0 + deep <= nv; v0 += deep) computeUnrolled<E, Op, kReduceUnroll, 1, 1>(io, false, v0, tid, nthreads);
  } else if (io.nIn == 2 && io.local) {
    for (; v0 + deep <= nv; v0 += deep) computeUnrolled<E, Op, kReduceUnroll, 2, 1>(io, false, v0, tid, nthreads);
  } else if (io.nIn == 2) {
    for (; v0 + deep <= nv; v0 += deep) computeUnrolled<E, Op, kReduceUnroll, 2, 0>(io, false, v0, tid, nthreads);
  } else {
    const uint64_t span = nthreads * kUnroll;
    for (; v0 + span <= nv; v0 += span) computeUnrolled<E, Op, kUnroll, -1, -1>(io, false, v0, tid, nthreads);
  }
  return v0;
}

// Elements [0, n) of the piece, split over `nthreads` threads starting at
// thread `tid`.
template <class E, class Op>
WEFT_DEV void computePiece(const PieceIo<E>& io, uint64_t n, uint64_t tid, uint64_t nthreads) {
  using S = typename E::Store;
  constexpr int N = 16 / sizeof(S);
  uintptr_t align = 0;
  for (int i = 0; i < io.nIn; i++) align |= reinterpret_cast<uintptr_t>(io.in[i]);
  if (io.local) align |= reinterpret_cast<uintptr_t>(io.local);
  for (int i = 0; i < io.nOut; i++) align |= reinterpret_cast<uintptr_t>(io.out[i]);
  const bool raw = isRawCopy(io);
  uint64_t done = 0;
  if ((align & 15) == 0) {
    const uint64_t nv = n / N;
    const Vec16 zero{};
    for (uint64_t v = computeVectorsUnrolled<E, Op>(io, raw, nv, tid, nthreads) + tid; v < nv; v += nthreads) {
      Vec16 a = zero, b = zero, l = zero;
      if (io.nIn > 0) a = loadSlotVec(reinterpret_cast<const Vec16*>(io.in[0]) + v);
      if (io.nIn > 1) b = loadSlotVec(reinterpret_cast<const Vec16*>(io.in[1]) + v);
      if (io.local) l = reinterpret_cast<const Vec16*>(io.local)[v];
      const Vec16 r = combineVec<E, Op>(io, raw, a, b, l);
      for (int o = 0; o < io.nOut; o++) reinterpret_cast<Vec16*>(io.out[o])[v] = r;
    }
    done = nv * N;
  }
  for (uint64_t i = done + tid; i < n; i += nthreads) {
    S a{}, b{}, l{}, r;
    if (io.nIn > 0) a = loadSlot(io.in[0] + i);
    if (io.nIn > 1) b = loadSlot(io.in[1] + i);
    if (io.local) l = io.local[i];
    r = raw ? (io.nIn ? a : l) : weft::kernels::storeElem<E>(combine<E, Op>(io, a, b, l));
    for (int o = 0; o < io.nOut; o++) io.out[o][i] = r;
  }
}

// The (type, base functor) pairs every kernel table is instantiated for:
// Avg and PreMulSum run as Sum with their post/pre flags.
#define WEFT_CUDA_FOR_EACH_TYPE(X)                                                                    \
  X(weftInt8) X(weftUint8) X(weftInt32) X(weftUint32) X(weftInt64) X(weftUint64) X(weftFloat16)    \
  X(weftFloat32) X(weftFloat64) X(weftBfloat16) X(weftFloat8e4m3) X(weftFloat8e5m2)

#if defined(__CUDACC__)
inline __host__ __device__ int baseFunctor(int opKind) {
#else
inline int baseFunctor(int opKind) {
#endif
  return (opKind == kOpAvg || opKind == kOpPreMulSum) ? kOpSum : opKind;
}

// The kernel of a family for (type, op): K<E, Op>::fn is the family's
// kernel for element E and functor Op. One table serves every family (the
// plan interpreter, the standalone reduce, the host emulation) so they
// cannot disagree on which (type, op) pairs exist. Returns nullptr for an
// unknown pair.
template <template <class, class> class K>
auto kernelFor(int type, int opKind) -> decltype(K<weft::kernels::Elem<weftFloat32>,
                                                   weft::kernels::FuncSum<weft::kernels::Elem<weftFloat32>>>::fn) {
  using weft::kernels::Elem;
  using weft::kernels::FuncMax;
  using weft::kernels::FuncMin;
  using weft::kernels::FuncProd;
  using weft::kernels::FuncSum;
  const int f = baseFunctor(opKind);
  switch (type) {
#define WEFT_ROW(T)                                          \
  case T:                                                    \
    switch (f) {                                             \
      case kOpSum: return K<Elem<T>, FuncSum<Elem<T>>>::fn;  \
      case kOpProd: return K<Elem<T>, FuncProd<Elem<T>>>::fn; \
      case kOpMax: return K<Elem<T>, FuncMax<Elem<T>>>::fn;  \
      case kOpMin: return K<Elem<T>, FuncMin<Elem<T>>>::fn;  \
      default: return nullptr;                               \
    }
    WEFT_CUDA_FOR_EACH_TYPE(WEFT_ROW)
#undef WEFT_ROW
    default: return nullptr;
  }
}

}  // namespace weft::cuda
