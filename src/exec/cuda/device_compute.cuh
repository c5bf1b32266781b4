// Device arithmetic for one stretch of elements: what the host executor's
// compute() does with kernels::reduce/transform, element for element, using
// the shared functors (functors.h). Rounding of narrow floats happens at the
// same points as on the host (the intermediate of a two-input reduce is
// stored once), so device and host results agree bit for bit.
//
// Inputs that come from FIFO slots are read with __ldcv: a slot is rewritten
// by another agent while the kernel runs, so a cached copy must never be
// used. 16-byte loads and stores when every pointer allows it.
#pragma once

#include <stdint.h>

#include "src/kernels/functors.h"

namespace weft::cuda {

enum DevOpKind : int32_t { kOpSum = 0, kOpProd = 1, kOpMax = 2, kOpMin = 3, kOpAvg = 4, kOpPreMulSum = 5 };

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
  A scale;
  int nranks;
};

template <class S>
__device__ __forceinline__ S loadVolatile(const S* p) {
  return *reinterpret_cast<const volatile S*>(p);
}

template <class E, class Op>
__device__ __forceinline__ typename E::Acc combine(const PieceIo<E>& io, typename E::Store i0, typename E::Store i1,
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
__device__ __forceinline__ bool isRawCopy(const PieceIo<E>& io) {
  return (io.nIn + (io.local ? 1 : 0)) == 1 && !io.post && !(io.pre && io.nIn == 0);
}

// Elements [0, n) of the piece, split over `nthreads` threads starting at
// thread `tid`.
template <class E, class Op>
__device__ void computePiece(const PieceIo<E>& io, uint64_t n, uint64_t tid, uint64_t nthreads) {
  using S = typename E::Store;
  constexpr int N = 16 / sizeof(S);
  union V16 {
    uint4 v;
    S s[N];
  };
  uintptr_t align = 0;
  for (int i = 0; i < io.nIn; i++) align |= reinterpret_cast<uintptr_t>(io.in[i]);
  if (io.local) align |= reinterpret_cast<uintptr_t>(io.local);
  for (int i = 0; i < io.nOut; i++) align |= reinterpret_cast<uintptr_t>(io.out[i]);
  const bool raw = isRawCopy(io);
  uint64_t done = 0;
  if ((align & 15) == 0) {
    const uint64_t nv = n / N;
    for (uint64_t v = tid; v < nv; v += nthreads) {
      V16 a, b, l, r;
      if (io.nIn > 0) a.v = __ldcv(reinterpret_cast<const uint4*>(io.in[0]) + v);
      if (io.nIn > 1) b.v = __ldcv(reinterpret_cast<const uint4*>(io.in[1]) + v);
      if (io.local) l.v = reinterpret_cast<const uint4*>(io.local)[v];
      if (raw) {
        r.v = io.nIn ? a.v : l.v;
      } else {
#pragma unroll
        for (int k = 0; k < N; k++)
          r.s[k] = weft::kernels::storeElem<E>(combine<E, Op>(io, a.s[k], b.s[k], l.s[k]));
      }
      for (int o = 0; o < io.nOut; o++) reinterpret_cast<uint4*>(io.out[o])[v] = r.v;
    }
    done = nv * N;
  }
  for (uint64_t i = done + tid; i < n; i += nthreads) {
    S a{}, b{}, l{}, r;
    if (io.nIn > 0) a = loadVolatile(io.in[0] + i);
    if (io.nIn > 1) b = loadVolatile(io.in[1] + i);
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

inline __host__ __device__ int baseFunctor(int opKind) {
  return (opKind == kOpAvg || opKind == kOpPreMulSum) ? kOpSum : opKind;
}

// The kernel of a family for (type, op): K<E, Op>::fn is the family's
// kernel for element E and functor Op. One table serves every family (the
// plan interpreter, the standalone reduce) so they cannot disagree on which
// (type, op) pairs exist. Returns nullptr for an unknown pair.
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
