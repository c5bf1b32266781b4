#include "src/exec/cuda/reduce_kernel.h"

#include "src/exec/cuda/device_compute.cuh"
#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"

namespace weft::cuda {
namespace {

struct ReduceArgs {
  void* dst;
  const void* a;
  const void* b;
  uint64_t count;
  int32_t opKind;
  int32_t nranks;
  alignas(8) unsigned char scalar[8];
};

template <class E, class Op>
__global__ void reduceKernel(const __grid_constant__ ReduceArgs r) {
  using S = typename E::Store;
  PieceIo<E> io;
  io.nIn = 1;
  io.in[0] = static_cast<const S*>(r.a);
  io.in[1] = nullptr;
  io.local = static_cast<const S*>(r.b);
  io.out[0] = static_cast<S*>(r.dst);
  io.nOut = 1;
  io.pre = r.opKind == kOpPreMulSum;
  io.post = r.opKind == kOpAvg;
  io.scale = {};
  if (io.pre) {
    S s;
    memcpy(&s, r.scalar, sizeof(S));
    io.scale = weft::kernels::loadElem<E>(s);
  }
  io.native = false;
  io.nranks = r.nranks;
  computePiece<E, Op>(io, r.count, uint64_t(blockIdx.x) * blockDim.x + threadIdx.x, uint64_t(gridDim.x) * blockDim.x);
}

template <class E, class Op>
struct ReduceKernelFamily {
  static constexpr void (*fn)(ReduceArgs) = &reduceKernel<E, Op>;
};

}  // namespace

void launchReduce(void* dst, const void* a, const void* b, size_t count, const kernels::RedOp& op,
                  cudaStream_t stream) {
  auto fn = kernelFor<ReduceKernelFamily>(op.type, static_cast<int>(op.kind));
  if (!fn) raise(weftInvalidArgument, "device reduce: no kernel for type %d op %d", op.type, static_cast<int>(op.kind));
  if (count == 0) return;
  ReduceArgs r{dst, a, b, count, static_cast<int32_t>(op.kind), op.nranks, {}};
  memcpy(r.scalar, op.scalar, sizeof(r.scalar));
  const size_t elem = kernels::typeSize(op.type);
  const size_t vec = (count * elem + 15) / 16;
  int blocks = static_cast<int>((vec + 511) / 512);
  if (blocks > 1024) blocks = 1024;
  if (blocks < 1) blocks = 1;
  void* args[] = {&r};
  WEFT_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(blocks), dim3(512), args, 0, stream));
}

}  // namespace weft::cuda
