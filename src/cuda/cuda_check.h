// Every CUDA runtime call goes through WEFT_CUDA_CHECK: a failure becomes a
// weft::Error naming the call, the CUDA error and where it happened. "No GPU"
// and "driver too old/missing" become weftInvalidUsage with a message that
// says so plainly, since that is a set-up problem, not a library fault.
#pragma once

#include <cuda_runtime_api.h>

namespace weft::cuda {

[[noreturn]] void raiseCuda(cudaError_t err, const char* call, const char* file, int line);

// True when at least one GPU is visible and the driver works (cached after
// the first call; never throws).
bool gpuAvailable();

}  // namespace weft::cuda

#define WEFT_CUDA_CHECK(call)                                                       \
  do {                                                                              \
    cudaError_t weft_cuda_err_ = (call);                                            \
    if (weft_cuda_err_ != cudaSuccess) ::weft::cuda::raiseCuda(weft_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
