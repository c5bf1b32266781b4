#include "src/compress/reducer_device.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"

#if WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "src/exec/cuda/reduce_kernel.h"
#include "src/exec/cuda/runtime.h"
#include "src/kernels/reduce.h"
#endif

namespace weft::compress {

#if WEFT_HAVE_CUDA

int buffersDevice(const std::vector<void*>& buffers, const std::vector<size_t>& counts) {
  int first = -2;
  size_t firstIndex = 0;
  for (size_t i = 0; i < buffers.size(); i++) {
    if (counts[i] == 0) continue;
    const int d = cuda::deviceOf(buffers[i]);
    if (first == -2) {
      first = d;
      firstIndex = i;
    } else if (d != first) {
      auto where = [](int dev) { return dev < 0 ? std::string("host memory") : "GPU " + std::to_string(dev); };
      raise(weftInvalidArgument,
            "weftReducerCreate: buffer %zu is in %s but buffer %zu in %s: a reducer's buffers must all be host "
            "memory or all on one GPU",
            firstIndex, where(first).c_str(), i, where(d).c_str());
    }
  }
  return first == -2 ? -1 : first;
}

struct DeviceBuckets::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> ready;
  std::vector<void*> flat;
  cudaEvent_t done = nullptr;
};

DeviceBuckets::DeviceBuckets(int device, size_t nbuffers, const std::vector<size_t>& flatBytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.device = device;
  cuda::DeviceGuard guard(device);
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&m.done, cudaEventDisableTiming));
  m.ready.resize(nbuffers, nullptr);
  for (cudaEvent_t& e : m.ready) WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  m.flat.resize(flatBytes.size(), nullptr);
  for (size_t b = 0; b < flatBytes.size(); b++) WEFT_CUDA_CHECK(cudaMalloc(&m.flat[b], flatBytes[b] ? flatBytes[b] : 1));
}

DeviceBuckets::~DeviceBuckets() {
  Impl& m = *impl_;
  try {
    cuda::DeviceGuard guard(m.device);
    if (m.stream) finish(10000, "reducer teardown");
  } catch (const Error& e) {
    WEFT_WARN("weftReducerDestroy: %s; freeing its device memory anyway", e.what());
  }
  for (void* p : m.flat) (void)cudaFree(p);
  for (cudaEvent_t e : m.ready) (void)cudaEventDestroy(e);
  if (m.done) (void)cudaEventDestroy(m.done);
  if (m.stream) (void)cudaStreamDestroy(m.stream);
}

void DeviceBuckets::markReady(int index, weftStream_t producer) {
  cuda::DeviceGuard guard(impl_->device);
  WEFT_CUDA_CHECK(cudaEventRecord(impl_->ready[size_t(index)], static_cast<cudaStream_t>(producer)));
}

void DeviceBuckets::pack(int bucket, const std::vector<BucketSlice>& slices, void* const* buffers) {
  Impl& m = *impl_;
  cuda::DeviceGuard guard(m.device);
  char* flat = static_cast<char*>(m.flat[size_t(bucket)]);
  for (const BucketSlice& s : slices) {
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(m.stream, m.ready[size_t(s.buffer)], 0));
    if (s.bytes)
      WEFT_CUDA_CHECK(cudaMemcpyAsync(flat + s.offsetBytes, buffers[s.buffer], s.bytes, cudaMemcpyDeviceToDevice, m.stream));
  }
}

void DeviceBuckets::unpack(int bucket, const std::vector<BucketSlice>& slices, void* const* buffers) {
  Impl& m = *impl_;
  cuda::DeviceGuard guard(m.device);
  const char* flat = static_cast<const char*>(m.flat[size_t(bucket)]);
  for (const BucketSlice& s : slices)
    if (s.bytes)
      WEFT_CUDA_CHECK(cudaMemcpyAsync(buffers[s.buffer], flat + s.offsetBytes, s.bytes, cudaMemcpyDeviceToDevice, m.stream));
}

void DeviceBuckets::average(int bucket, size_t count, weftDataType_t type, int nranks) {
  cuda::DeviceGuard guard(impl_->device);
  kernels::RedOp avg;
  avg.kind = kernels::OpKind::Avg;
  avg.type = type;
  avg.nranks = nranks;
  // One input and no local operand: dst = post(src), the division alone.
  cuda::launchReduce(impl_->flat[size_t(bucket)], impl_->flat[size_t(bucket)], nullptr, count, avg, impl_->stream);
}

void* DeviceBuckets::flat(int bucket) const { return impl_->flat[size_t(bucket)]; }

weftStream_t DeviceBuckets::stream() const { return impl_->stream; }

void DeviceBuckets::finish(int64_t timeoutMs, const char* what) {
  Impl& m = *impl_;
  cuda::DeviceGuard guard(m.device);
  WEFT_CUDA_CHECK(cudaEventRecord(m.done, m.stream));
  const Deadline deadline = timeoutMs > 0 ? Deadline::after(timeoutMs) : Deadline{INT64_MAX};
  for (;;) {
    const cudaError_t e = cudaEventQuery(m.done);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) WEFT_CUDA_CHECK(e);
    if (deadline.passed())
      raise(weftTimeout, "weftReducer: %s: the device work did not finish within %lld ms", what,
            static_cast<long long>(timeoutMs));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

#else  // !WEFT_HAVE_CUDA

int buffersDevice(const std::vector<void*>&, const std::vector<size_t>&) { return -1; }

struct DeviceBuckets::Impl {};

DeviceBuckets::DeviceBuckets(int, size_t, const std::vector<size_t>&) {
  raise(weftInvalidUsage, "device buffers need weft built with CUDA (WEFT_ENABLE_CUDA)");
}
DeviceBuckets::~DeviceBuckets() = default;
void DeviceBuckets::markReady(int, weftStream_t) {}
void DeviceBuckets::pack(int, const std::vector<BucketSlice>&, void* const*) {}
void DeviceBuckets::unpack(int, const std::vector<BucketSlice>&, void* const*) {}
void DeviceBuckets::average(int, size_t, weftDataType_t, int) {}
void* DeviceBuckets::flat(int) const { return nullptr; }
weftStream_t DeviceBuckets::stream() const { return nullptr; }
void DeviceBuckets::finish(int64_t, const char*) {}

#endif

}  // namespace weft::compress
