// The CUDA runtime as weft uses it.
//
// Every CUDA runtime call goes through WEFT_CUDA_CHECK: a failure becomes a
// weft::Error naming the call, the CUDA error and where it happened. "No GPU"
// and "driver too old/missing" become weftInvalidUsage with a message that
// says so plainly, since that is a set-up problem, not a library fault.
// Besides: whether a GPU is there, a guard that makes a device current, and
// what kind of memory a user pointer is.
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

namespace weft::cuda {

// Makes a CUDA device current for the lifetime of the guard and restores the
// caller's device afterwards (runtime and driver calls act on the current
// device's context).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    WEFT_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) WEFT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// What kind of memory a user pointer is, asked of the CUDA runtime once per
// call and buffer (cudaPointerGetAttributes).
enum class BufferKind {
  Unregistered,  // plain host memory CUDA knows nothing of (or no GPU at all)
  Host,          // host memory pinned/registered with CUDA
  Device,        // cudaMalloc'd (or IPC-mapped) device memory
  Managed,       // cudaMallocManaged
};

const char* bufferKindName(BufferKind k);

// Fills device memory on the current device (`src` bytes first, when
// given, then zeros to `bytes`) and returns when the GPU has done it. A
// plain cudaMemcpy from pageable memory or cudaMemset returns before the
// GPU is done, on the legacy stream, which kernels on non-blocking streams
// do not wait for: a peer's first kernel could read the memory's previous
// contents (in a reused allocation, stale LL flags that look valid).
// Uses a stream of its own, so it waits for nothing else. Throws weft::Error.
void fillDeviceNow(void* dst, size_t bytes, const void* src = nullptr, size_t srcBytes = 0);

// Never throws; without a GPU or driver every pointer is Unregistered.
BufferKind classify(const void* p);

// The GPU whose memory p points into (device or managed memory), or -1 for
// host memory and pointers CUDA does not know. Never throws.
int deviceOf(const void* p);

// Whether the executor must run a call with these buffers on the device.
inline bool runsOnDevice(BufferKind k) { return k == BufferKind::Device || k == BufferKind::Managed; }

}  // namespace weft::cuda
