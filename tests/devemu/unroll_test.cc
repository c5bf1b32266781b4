// The unrolled loops of device_compute.cuh (plain copies kCopyUnroll deep,
// reductions kReduceUnroll deep per input shape, the generic kUnroll loop)
// compiled for the host: every input shape a piece can have, every type,
// counts on both sides of each unrolled block and of the one-vector loop,
// 1, 3 and 32 threads, aligned and misaligned pointers (one of them or all).
// The reference is the same per-element combine() run element by element,
// so what is checked is which element each thread loads, combines and
// stores: every output element once, nothing outside [0, n) touched.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "src/exec/cuda/device_compute.cuh"
#include "src/kernels/reduce.h"

namespace weft::devemu {
namespace {

// The inputs and outputs of one piece, as the interpreter hands them over.
struct Shape {
  const char* name;
  int nIn;     // FIFO inputs
  bool local;  // user/scratch input
  int nOut;
  int opKind;  // cuda::DevOpKind
};

const Shape kShapes[] = {
    {"copy from a slot to 1 output", 1, false, 1, cuda::kOpSum},
    {"copy from a slot to 3 outputs", 1, false, 3, cuda::kOpSum},
    {"copy from the local buffer to 2 outputs", 0, true, 2, cuda::kOpSum},
    {"slot + local (ring reduce)", 1, true, 2, cuda::kOpSum},
    {"slot + slot + local (tree)", 2, true, 1, cuda::kOpMax},
    {"slot + slot", 2, false, 2, cuda::kOpProd},
    {"local scaled (PreMulSum, generic loop)", 0, true, 1, cuda::kOpPreMulSum},
    {"slot averaged (Avg, generic loop)", 1, false, 1, cuda::kOpAvg},
};

// Where the buffers start: 16-byte aligned, every pointer one element past
// it, or only the last output (the piece then runs element by element).
enum class Misalign { None, All, OneOutput };

constexpr size_t kGuard = 64;  // bytes of poison before and after each buffer
constexpr unsigned char kPoison = 0x5A;

void randomBytes(unsigned char* p, size_t n, std::mt19937_64& rng) {
  for (size_t i = 0; i < n; i++) p[i] = static_cast<unsigned char>(rng());
}

// Small values of the type, so that Prod and PreMulSum stay finite and no
// NaN payload is compared.
template <class E>
typename E::Store smallValue(std::mt19937_64& rng) {
  using S = typename E::Store;
  if constexpr (E::kIsFloat) {
    const float v = float(int(rng() % 7) - 3) * 0.5f;
    return kernels::storeElem<E>(typename E::Acc(v));
  } else {
    S s;
    randomBytes(reinterpret_cast<unsigned char*>(&s), sizeof(S), rng);
    return s;
  }
}

struct Buffer {
  std::vector<unsigned char> mem;
  unsigned char* at = nullptr;
  Buffer(size_t bytes, size_t mis) : mem(bytes + 2 * kGuard + 16, kPoison) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(mem.data()) + kGuard;
    at = mem.data() + ((base + 15) / 16 * 16 - reinterpret_cast<uintptr_t>(mem.data())) + mis;
  }
};

// Runs one piece through computePiece (thread by thread, as a CTA of
// `nthreads` would split it) and element by element through combine();
// empty when both wrote the same bytes and nothing else.
template <class E, class Op>
std::string runShape(const Shape& sh, uint64_t n, uint64_t nthreads, Misalign mis, uint64_t seed) {
  using S = typename E::Store;
  const size_t es = sizeof(S), bytes = n * es;
  std::mt19937_64 rng(seed);
  const size_t m = mis == Misalign::All ? es : 0;
  Buffer in0(bytes, m), in1(bytes, m), loc(bytes, m);
  std::vector<Buffer> got, want;
  for (int o = 0; o < sh.nOut; o++) {
    const size_t mo = (mis == Misalign::OneOutput && o == sh.nOut - 1) ? es : m;
    got.emplace_back(bytes, mo);
    want.emplace_back(bytes, mo);
  }
  for (Buffer* b : {&in0, &in1, &loc})
    for (uint64_t i = 0; i < n; i++) {
      const S v = smallValue<E>(rng);
      std::memcpy(b->at + i * es, &v, es);
    }
  cuda::PieceIo<E> io;
  io.nIn = sh.nIn;
  io.in[0] = reinterpret_cast<const S*>(in0.at);
  io.in[1] = reinterpret_cast<const S*>(in1.at);
  io.local = sh.local ? reinterpret_cast<const S*>(loc.at) : nullptr;
  io.nOut = sh.nOut;
  io.pre = sh.opKind == cuda::kOpPreMulSum;
  io.post = sh.opKind == cuda::kOpAvg;
  io.native = false;
  io.scale = kernels::loadElem<E>(smallValue<E>(rng));
  io.nranks = 3;
  for (int o = 0; o < sh.nOut; o++) io.out[o] = reinterpret_cast<S*>(got[o].at);
  for (uint64_t tid = 0; tid < nthreads; tid++) cuda::computePiece<E, Op>(io, n, tid, nthreads);
  const bool raw = cuda::isRawCopy(io);
  for (uint64_t i = 0; i < n; i++) {
    const S a = io.in[0][i], b = io.in[1][i], l = io.local ? io.local[i] : S{};
    const S r = raw ? (io.nIn ? a : l) : kernels::storeElem<E>(cuda::combine<E, Op>(io, a, b, l));
    for (int o = 0; o < sh.nOut; o++) std::memcpy(want[o].at + i * es, &r, es);
  }
  for (int o = 0; o < sh.nOut; o++)
    if (got[o].mem != want[o].mem) {
      size_t at = 0;
      while (got[o].mem[at] == want[o].mem[at]) at++;
      const long elem = (long(at) - long(got[o].at - got[o].mem.data())) / long(es);
      return std::string("output ") + std::to_string(o) + " differs at element " + std::to_string(elem) +
             (elem < 0 || uint64_t(elem) >= n ? " (outside the piece)" : "");
    }
  return {};
}

using ShapeFn = std::string (*)(const Shape&, uint64_t, uint64_t, Misalign, uint64_t);
template <class E, class Op>
struct ShapeFamily {
  static constexpr ShapeFn fn = &runShape<E, Op>;
};

TEST(DevEmu, UnrolledLoopsEveryShapeTypeAndRemainder) {
  const weftDataType_t types[] = {weftInt8,    weftUint8,   weftInt32,   weftUint32,     weftInt64,     weftUint64,
                                  weftFloat16, weftFloat32, weftFloat64, weftBfloat16, weftFloat8e4m3, weftFloat8e5m2};
  // Vector counts on both sides of the unrolled blocks for 1, 3 and 32
  // threads (4 and 8 deep: 4, 8, 12, 24, 128, 256 vectors), plus element
  // tails that do not fill a vector.
  const uint64_t vectors[] = {0, 1, 3, 4, 5, 7, 8, 9, 12, 13, 23, 24, 25, 127, 128, 129, 257};
  uint64_t seed = 1, checked = 0;
  for (weftDataType_t t : types) {
    const uint64_t perVec = 16 / kernels::typeSize(t);
    for (const Shape& sh : kShapes) {
      ShapeFn fn = cuda::kernelFor<ShapeFamily>(t, sh.opKind);
      ASSERT_NE(fn, nullptr);
      for (uint64_t nthreads : {1, 3, 32})
        for (uint64_t nv : vectors)
          for (uint64_t tail : {uint64_t(0), uint64_t(1), perVec - 1}) {
            const uint64_t n = nv * perVec + tail;
            for (Misalign mis : {Misalign::None, Misalign::All, Misalign::OneOutput}) {
              if (n == 0 && mis != Misalign::None) continue;
              const std::string why = fn(sh, n, nthreads, mis, seed++);
              ASSERT_EQ(why, "") << kernels::typeName(t) << ", " << sh.name << ", " << n << " elements, " << nthreads
                                 << " threads, misaligned " << int(mis);
              checked++;
            }
          }
    }
  }
  EXPECT_GT(checked, 12u * 8u * 3u * 17u * 2u);
}

}  // namespace
}  // namespace weft::devemu
