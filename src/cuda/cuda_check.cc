#include "src/cuda/cuda_check.h"

#include <mutex>

#include "src/util/error.h"

namespace weft::cuda {

void raiseCuda(cudaError_t err, const char* call, const char* file, int line) {
  // Clear the sticky-less last error so the next call starts clean.
  (void)cudaGetLastError();
  const bool setup = err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
                     err == cudaErrorInitializationError || err == cudaErrorInvalidDevice;
  raise(setup ? weftInvalidUsage : weftSystemError, "CUDA call %s failed at %s:%d: %s (%s)%s", call, file, line,
        cudaGetErrorString(err), cudaGetErrorName(err),
        setup ? ": no usable GPU or CUDA driver in this process" : "");
}

bool gpuAvailable() {
  static std::once_flag once;
  static bool available = false;
  std::call_once(once, [] {
    int n = 0;
    available = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    (void)cudaGetLastError();
  });
  return available;
}

}  // namespace weft::cuda
