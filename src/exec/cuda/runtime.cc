#include "src/exec/cuda/runtime.h"

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

const char* bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Unregistered: return "host (unregistered)";
    case BufferKind::Host: return "host (pinned)";
    case BufferKind::Device: return "device";
    case BufferKind::Managed: return "managed";
  }
  return "?";
}

void fillDeviceNow(void* dst, size_t bytes, const void* src, size_t srcBytes) {
  if (srcBytes > bytes) raise(weftInternalError, "fillDeviceNow: %zu source bytes for %zu", srcBytes, bytes);
  cudaStream_t s = nullptr;
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaError_t err = cudaSuccess;
  char* d = static_cast<char*>(dst);
  if (srcBytes) err = cudaMemcpyAsync(d, src, srcBytes, cudaMemcpyHostToDevice, s);
  if (err == cudaSuccess && bytes > srcBytes) err = cudaMemsetAsync(d + srcBytes, 0, bytes - srcBytes, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  (void)cudaStreamDestroy(s);
  if (err != cudaSuccess) raiseCuda(err, "fillDeviceNow", __FILE__, __LINE__);
}

int deviceOf(const void* p) {
  if (!p || !gpuAvailable()) return -1;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
}

BufferKind classify(const void* p) {
  if (!p || !gpuAvailable()) return BufferKind::Unregistered;
  cudaPointerAttributes a{};
  cudaError_t err = cudaPointerGetAttributes(&a, p);
  if (err != cudaSuccess) {
    // Older runtimes report unknown host pointers as an error; it is not one.
    (void)cudaGetLastError();
    return BufferKind::Unregistered;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: return BufferKind::Device;
    case cudaMemoryTypeManaged: return BufferKind::Managed;
    case cudaMemoryTypeHost: return BufferKind::Host;
    default: return BufferKind::Unregistered;
  }
}

}  // namespace weft::cuda
