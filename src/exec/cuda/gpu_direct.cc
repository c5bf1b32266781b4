#include "src/exec/cuda/gpu_direct.h"

#include "src/util/error.h"

#if WEFT_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "src/exec/cuda/launch_policy.h"
#include "src/exec/cuda/runtime.h"
#endif

namespace weft::cuda {

#if WEFT_HAVE_CUDA

namespace {

// The few CUDA driver API calls GPUDirect needs, looked up through the
// runtime (cudaGetDriverEntryPointByVersion) so that libweft never links
// libcuda: the library still loads on a machine without a driver, and the
// calls are simply unavailable there.
struct DriverApi {
  CUresult (*deviceGet)(CUdevice* dev, int ordinal) = nullptr;
  CUresult (*deviceGetAttribute)(int* value, CUdevice_attribute attr, CUdevice dev) = nullptr;
  CUresult (*memGetHandleForAddressRange)(void* handle, CUdeviceptr dptr, size_t size,
                                          CUmemRangeHandleType type, unsigned long long flags) = nullptr;
  CUresult (*pointerSetAttribute)(const void* value, CUpointer_attribute attr, CUdeviceptr ptr) = nullptr;
  CUresult (*getErrorString)(CUresult err, const char** text) = nullptr;
};

// Every entry point used here exists since CUDA 11.7; asking for the 12.0
// ABI keeps working with any driver the static runtime accepts.
constexpr unsigned kAbiVersion = 12000;

struct Loaded {
  DriverApi api;
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool lookUp(const char* symbol, Fn*& slot, std::string* missing) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &fn, kAbiVersion, cudaEnableDefault, &found);
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
    (void)cudaGetLastError();
    *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
    if (err != cudaSuccess) *missing += std::string(" (") + cudaGetErrorString(err) + ")";
    return false;
  }
  slot = reinterpret_cast<Fn*>(fn);
  return true;
}

Loaded load() {
  Loaded l;
  std::string missing;
  lookUp("cuDeviceGet", l.api.deviceGet, &missing);
  lookUp("cuDeviceGetAttribute", l.api.deviceGetAttribute, &missing);
  lookUp("cuMemGetHandleForAddressRange", l.api.memGetHandleForAddressRange, &missing);
  lookUp("cuPointerSetAttribute", l.api.pointerSetAttribute, &missing);
  lookUp("cuGetErrorString", l.api.getErrorString, &missing);
  if (!missing.empty()) {
    l.why = "CUDA driver entry points not available: " + missing;
    return l;
  }
  l.ok = true;
  return l;
}

// The table, or nullptr when the driver (or one of these entry points) is
// missing; *why then says what. Looked up once per process.
const DriverApi* driverApi(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

// "CUDA_ERROR_NOT_SUPPORTED (operation not supported)" style text.
std::string driverErrorText(const DriverApi& api, CUresult err) {
  const char* text = nullptr;
  if (api.getErrorString) api.getErrorString(err, &text);
  return "CUDA driver error " + std::to_string(static_cast<int>(err)) + (text ? std::string(" (") + text + ")" : "");
}

constexpr size_t kGpuPage = size_t(2) << 20;
constexpr uintptr_t kHostPage = 4096;

const DriverApi& api() {
  std::string why;
  const DriverApi* d = driverApi(&why);
  if (!d) raise(weftSystemError, "GPU Direct RDMA: %s", why.c_str());
  return *d;
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
  if (d->deviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS)
    s.ccMajor = value;
  if (d->deviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS)
    s.ccMinor = value;
  return s;
}

GpuDirectBuffer::GpuDirectBuffer(int device, size_t bytes) {
  if (bytes == 0) raise(weftInternalError, "GPU Direct RDMA: empty buffer requested");
  DeviceGuard guard(device);
  const size_t rounded = (bytes + kGpuPage - 1) / kGpuPage * kGpuPage;
  void* p = nullptr;
  countDeviceSetup();
  WEFT_CUDA_CHECK(cudaMalloc(&p, rounded));
  if (reinterpret_cast<uintptr_t>(p) % kHostPage) {
    (void)cudaFree(p);
    raise(weftSystemError, "GPU Direct RDMA: cudaMalloc on GPU %d returned %p, not page aligned", device, p);
  }
  data_ = static_cast<char*>(p);
  bytes_ = rounded;
  device_ = device;
  // Slots start zeroed, as device LL expects (a reused allocation could
  // hold lines whose flags look current).
  fillDeviceNow(data_, bytes_);
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
  const int gpu = deviceOf(p);
  if (gpu < 0) raise(weftInternalError, "GPU Direct RDMA: %p is not device memory", p);
  DeviceGuard guard(gpu);
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
