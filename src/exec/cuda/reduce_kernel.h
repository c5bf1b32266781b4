// The device reduction alone, outside any plan: dst = a OP b over `count`
// elements (with Avg/PreMulSum's post/pre as kernels::reduce applies them
// with kApplyPre|kApplyPost). Used by the GPU tests against the host kernels
// and by the bandwidth micro-benchmark against a device-to-device copy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "src/kernels/reduce.h"

namespace weft::cuda {

void launchReduce(void* dst, const void* a, const void* b, size_t count, const kernels::RedOp& op,
                  cudaStream_t stream);

}  // namespace weft::cuda
