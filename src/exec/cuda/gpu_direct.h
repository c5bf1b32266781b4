// GPU memory that an HCA reads and writes directly (GPUDirect RDMA), and
// what a GPU supports for it. Compiled with and without CUDA: without it
// there is no support and no such memory, said plainly.
#pragma once

#include <cstddef>
#include <string>

namespace weft::cuda {

struct GpuDirectSupport {
  bool dmabuf = false;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  bool rdma = false;    // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED (nvidia_p2p_* kernel API)
  int ccMajor = -1;      // compute capability; -1: unknown
  int ccMinor = -1;
  std::string problem;  // non-empty when the GPU could not be asked, and why
};

// Never throws.
GpuDirectSupport gpuDirectSupport(int device);

// A cudaMalloc'd buffer on `device`, rounded up to whole 2 MiB GPU pages so
// that a registration of it covers this allocation alone, page aligned as
// dma-buf export requires. Move-only; freed on destruction.
class GpuDirectBuffer {
 public:
  GpuDirectBuffer() = default;
  GpuDirectBuffer(int device, size_t bytes);  // throws weft::Error
  GpuDirectBuffer(GpuDirectBuffer&& o) noexcept { *this = static_cast<GpuDirectBuffer&&>(o); }
  GpuDirectBuffer& operator=(GpuDirectBuffer&& o) noexcept;
  GpuDirectBuffer(const GpuDirectBuffer&) = delete;
  GpuDirectBuffer& operator=(const GpuDirectBuffer&) = delete;
  ~GpuDirectBuffer();

  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  void release();
  char* data_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

// A dma-buf file descriptor for [p, p + bytes) of device memory (both host
// page aligned); the caller closes it once the HCA has registered it.
// Throws weft::Error naming the driver's answer.
int exportDmaBuf(const void* p, size_t bytes);

// Makes synchronous CUDA memory operations on the allocation holding p
// complete before they return, as GPUDirect RDMA by peer memory expects
// of memory an HCA accesses. Throws weft::Error.
void syncMemops(const void* p);

}  // namespace weft::cuda
