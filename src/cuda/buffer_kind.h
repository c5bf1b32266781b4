// What kind of memory a user pointer is, asked of the CUDA runtime once per
// call and buffer (cudaPointerGetAttributes).
#pragma once

namespace weft::cuda {

enum class BufferKind {
  Unregistered,  // plain host memory CUDA knows nothing of (or no GPU at all)
  Host,          // host memory pinned/registered with CUDA
  Device,        // cudaMalloc'd (or IPC-mapped) device memory
  Managed,       // cudaMallocManaged
};

const char* bufferKindName(BufferKind k);

// Never throws; without a GPU or driver every pointer is Unregistered.
BufferKind classify(const void* p);

// Whether the executor must run a call with these buffers on the device.
inline bool runsOnDevice(BufferKind k) { return k == BufferKind::Device || k == BufferKind::Managed; }

}  // namespace weft::cuda
