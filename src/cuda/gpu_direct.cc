#include "src/cuda/gpu_direct.h"

#include "src/util/error.h"

#if WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "src/cuda/cuda_check.h"
#include "src/cuda/device_guard.h"
#include "src/cuda/driver_api.h"
#endif

namespace weft::cuda {

#if WEFT_HAVE_CUDA

namespace {

constexpr size_t kGpuPage = size_t(2) << 20;
constexpr uintptr_t kHostPage = 4096;

const DriverApi& api() {
  std::string why;
  const DriverApi* d = driverApi(&why);
  if (!d) raise(weftSystemError, "GPU Direct RDMA: %s", why.c_str());
  return *d;
}

int deviceOf(const void* p) {
  cudaPointerAttributes a{};
  WEFT_CUDA_CHECK(cudaPointerGetAttributes(&a, p));
  if (a.type != cudaMemoryTypeDevice)
    raise(weftInternalError, "GPU Direct RDMA: %p is not device memory", p);
  return a.device;
}

}  // namespace

GpuDirectSupport gpuDirectSupport(int device) {
  GpuDirectSupport s;
  if (!gpuAvailable()) {
    s.problem = "no usable GPU or CUDA driver in this process";
    return s;
  }
  const DriverApi* d = driverApi(&s.problem);
  if (!d) return s;
  CUdevice dev = 0;
  CUresult r = d->deviceGet(&dev, device);
  if (r != CUDA_SUCCESS) {
    s.problem = "cuDeviceGet(" + std::to_string(device) + "): " + driverErrorText(*d, r);
    return s;
  }
  int value = 0;
  if (d->deviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) == CUDA_SUCCESS) s.dmabuf = value;
  value = 0;
  if (d->deviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, dev) == CUDA_SUCCESS)
    s.rdma = value;
  return s;
}

GpuDirectBuffer::GpuDirectBuffer(int device, size_t bytes) {
  if (bytes == 0) raise(weftInternalError, "GPU Direct RDMA: empty buffer requested");
  DeviceGuard guard(device);
  const size_t rounded = (bytes + kGpuPage - 1) / kGpuPage * kGpuPage;
  void* p = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&p, rounded));
  if (reinterpret_cast<uintptr_t>(p) % kHostPage) {
    (void)cudaFree(p);
    raise(weftSystemError, "GPU Direct RDMA: cudaMalloc on GPU %d returned %p, not page aligned", device, p);
  }
  data_ = static_cast<char*>(p);
  bytes_ = rounded;
  device_ = device;
}

GpuDirectBuffer& GpuDirectBuffer::operator=(GpuDirectBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    bytes_ = o.bytes_;
    device_ = o.device_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

GpuDirectBuffer::~GpuDirectBuffer() { release(); }

void GpuDirectBuffer::release() {
  if (!data_) return;
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  (void)cudaSetDevice(device_);
  (void)cudaFree(data_);
  if (restore) (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
  data_ = nullptr;
}

int exportDmaBuf(const void* p, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(p) % kHostPage || bytes % kHostPage)
    raise(weftInternalError, "GPU Direct RDMA: dma-buf export of %zu bytes at %p is not page aligned", bytes, p);
  const DriverApi& d = api();
  DeviceGuard guard(deviceOf(p));
  int fd = -1;
  CUresult r = d.memGetHandleForAddressRange(&fd, reinterpret_cast<CUdeviceptr>(p), bytes,
                                             CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS || fd < 0)
    raise(weftSystemError, "GPU Direct RDMA: cuMemGetHandleForAddressRange(dma-buf, %zu bytes) failed: %s", bytes,
          driverErrorText(d, r).c_str());
  return fd;
}

void syncMemops(const void* p) {
  const DriverApi& d = api();
  unsigned int on = 1;
  CUresult r = d.pointerSetAttribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, reinterpret_cast<CUdeviceptr>(p));
  if (r != CUDA_SUCCESS)
    raise(weftSystemError, "GPU Direct RDMA: cuPointerSetAttribute(SYNC_MEMOPS) failed: %s",
          driverErrorText(d, r).c_str());
}

#else  // !WEFT_HAVE_CUDA

GpuDirectSupport gpuDirectSupport(int) {
  GpuDirectSupport s;
  s.problem = "weft was built without CUDA";
  return s;
}

GpuDirectBuffer::GpuDirectBuffer(int, size_t) {
  raise(weftInvalidUsage, "GPU Direct RDMA: weft was built without CUDA");
}
GpuDirectBuffer& GpuDirectBuffer::operator=(GpuDirectBuffer&& o) noexcept {
  data_ = o.data_;
  bytes_ = o.bytes_;
  device_ = o.device_;
  o.data_ = nullptr;
  return *this;
}
GpuDirectBuffer::~GpuDirectBuffer() = default;
void GpuDirectBuffer::release() {}

int exportDmaBuf(const void*, size_t) { raise(weftInvalidUsage, "GPU Direct RDMA: weft was built without CUDA"); }
void syncMemops(const void*) { raise(weftInvalidUsage, "GPU Direct RDMA: weft was built without CUDA"); }

#endif

}  // namespace weft::cuda
