// Launch helpers shared by the compression kernels (device_*.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/exec/cuda/runtime.h"

namespace weft::compress::device {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items: enough to fill the GPU,
// never more than the items need.
inline unsigned gridFor(size_t n, int threads = kThreads) {
  size_t b = (n + threads - 1) / threads;
  if (b > 4096) b = 4096;
  return b < 1 ? 1u : unsigned(b);
}

// The grid-stride loop's first index and stride.
__device__ inline size_t firstIndex() { return size_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline size_t gridStride() { return size_t(gridDim.x) * blockDim.x; }

// A kernel launch's own errors (bad configuration) are reported at once.
#define WEFT_KERNEL_CHECK() WEFT_CUDA_CHECK(cudaGetLastError())

}  // namespace weft::compress::device
