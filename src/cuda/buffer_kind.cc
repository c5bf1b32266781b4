#include "src/cuda/buffer_kind.h"

#include <cuda_runtime_api.h>

#include "src/cuda/cuda_check.h"

namespace weft::cuda {

const char* bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Unregistered: return "host (unregistered)";
    case BufferKind::Host: return "host (pinned)";
    case BufferKind::Device: return "device";
    case BufferKind::Managed: return "managed";
  }
  return "?";
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
