// The device arithmetic (device_compute.cuh's computePiece, which the
// interpreter and the standalone reduce kernel use) compiled for the host,
// against the host kernels (kernels::reduce) bit for bit: every type and
// op, random finite bit patterns, aligned and misaligned pointers, counts
// around the vector and unroll sizes. NaN and infinity inputs are left out:
// which NaN payload a float add returns depends on operand order, which
// the host compiler and SIMD loops choose freely (and a GPU returns its
// canonical NaN), so NaN bits are not comparable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "src/exec/cuda/device_compute.cuh"
#include "src/kernels/reduce.h"

namespace weft::devemu {
namespace {

using PieceFn = void (*)(void* dst, const void* a, const void* b, uint64_t n, int opKind, int nranks,
                         const unsigned char* scalar);

// dst = post(a OP pre(b)), as the standalone reduce kernel runs it, with
// the threads of a 3-thread CTA taken one after another.
template <class E, class Op>
void reducePiece(void* dst, const void* a, const void* b, uint64_t n, int opKind, int nranks,
                 const unsigned char* scalar) {
  using S = typename E::Store;
  cuda::PieceIo<E> io;
  io.nIn = 1;
  io.in[0] = static_cast<const S*>(a);
  io.in[1] = nullptr;
  io.local = static_cast<const S*>(b);
  io.out[0] = static_cast<S*>(dst);
  io.nOut = 1;
  io.pre = opKind == cuda::kOpPreMulSum;
  io.post = opKind == cuda::kOpAvg;
  io.native = false;
  S s;
  std::memcpy(&s, scalar, sizeof(S));
  io.scale = kernels::loadElem<E>(s);
  io.nranks = nranks;
  for (uint64_t tid = 0; tid < 3; tid++) cuda::computePiece<E, Op>(io, n, tid, 3);
}

template <class E, class Op>
struct ReducePieceFamily {
  static constexpr PieceFn fn = &reducePiece<E, Op>;
};

// A random element of type t that is a finite number.
void randomFinite(unsigned char* p, weftDataType_t t, std::mt19937_64& rng) {
  const size_t es = kernels::typeSize(t);
  for (;;) {
    for (size_t i = 0; i < es; i++) p[i] = static_cast<unsigned char>(rng());
    double v = 0;
    uint64_t bits = 0;
    std::memcpy(&bits, p, es);
    switch (t) {
      case weftFloat16: v = kernels::halfToFloat(uint16_t(bits)); break;
      case weftBfloat16: v = kernels::bf16ToFloat(uint16_t(bits)); break;
      case weftFloat8e4m3: v = kernels::e4m3ToFloat(uint8_t(bits)); break;
      case weftFloat8e5m2: v = kernels::e5m2ToFloat(uint8_t(bits)); break;
      case weftFloat32: {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
        break;
      }
      case weftFloat64: std::memcpy(&v, p, 8); break;
      default: return;  // integers: any bits
    }
    if (std::isfinite(v)) return;
  }
}

TEST(DevEmu, ComputeMatchesHostKernels) {
  const weftDataType_t types[] = {weftInt8,    weftUint8,   weftInt32,   weftUint32,     weftInt64,     weftUint64,
                                  weftFloat16, weftFloat32, weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};
  std::mt19937_64 rng(7);
  int checked = 0;
  for (weftDataType_t t : types)
    for (int op = cuda::kOpSum; op <= cuda::kOpPreMulSum; op++) {
      PieceFn fn = cuda::kernelFor<ReducePieceFamily>(t, op);
      ASSERT_NE(fn, nullptr);
      const size_t es = kernels::typeSize(t);
      kernels::RedOp rop;
      rop.kind = static_cast<kernels::OpKind>(op);
      rop.type = t;
      rop.nranks = 3;
      randomFinite(rop.scalar, t, rng);
      for (uint64_t n : {1, 15, 16, 17, 200, 1000})
        for (size_t mis : {0, 1}) {
          std::vector<unsigned char> a((n + 32) * es), b((n + 32) * es), got((n + 32) * es), want((n + 32) * es);
          for (size_t i = 0; i < a.size(); i += es) {
            randomFinite(&a[i], t, rng);
            randomFinite(&b[i], t, rng);
          }
          const size_t off = 16 + mis * es;  // 16-byte aligned, or one element past
          fn(got.data() + off, a.data() + off, b.data() + off, n, op, rop.nranks, rop.scalar);
          kernels::reduce(want.data() + off, a.data() + off, b.data() + off, n, rop,
                          kernels::kApplyPre | kernels::kApplyPost);
          ASSERT_EQ(std::memcmp(got.data() + off, want.data() + off, n * es), 0)
              << "type " << kernels::typeName(t) << " op " << kernels::opName(rop.kind) << " n " << n << " misaligned "
              << mis;
          checked++;
        }
    }
  EXPECT_EQ(checked, 12 * 6 * 6 * 2);
}

}  // namespace
}  // namespace weft::devemu
