#include "src/compress/device_compress.h"

#include "src/compress/compressor.h"
#include "src/util/error.h"
#include "src/util/log.h"

#if WEFT_HAVE_CUDA
#include <cstring>
#include <string>

#include "src/compress/device_kernels.h"
#include "src/compress/sign.h"
#include "src/core/comm.h"
#include "src/exec/cuda/device_route.h"
#include "src/exec/cuda/runtime.h"
#include "src/kernels/reduce.h"
#endif

namespace weft::compress {

#if WEFT_HAVE_CUDA

// One allocation holds everything; the pointers are carved out of it.
struct DeviceCompressor {
  int device = -1;
  char* arena = nullptr;
  size_t residualCount = 0;
  float* residual = nullptr;  // count (+ chunkElems for Sign) entries, with error feedback
  float* work = nullptr;      // count: the input plus the residual
  float* out = nullptr;       // count: the float32 result of a 16-bit buffer
  float* sum = nullptr;       // chunkElems: the Sign owner's sum
  void* scratch = nullptr;
  unsigned char *sendBytes = nullptr, *recvBytes = nullptr, *packed = nullptr;
  int* badIndex = nullptr;     // set by the scatter-add when a peer's index is out of range
  int* badIndexHost = nullptr;  // pinned: its copy, read by a host callback on the stream
  weftComm_t comm = nullptr;
  size_t count = 0;
  cudaEvent_t done = nullptr;     // recorded at the end of every call
  cudaStream_t own = nullptr;     // for Reset, ordered after the last call
  bool used = false;

  ~DeviceCompressor() {
    // Destroy runs after the caller's last call was queued: let it finish
    // before its memory goes. Errors are ignored (nothing to report to).
    if (device < 0) return;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device);
    if (done) (void)cudaEventSynchronize(done);
    if (arena) (void)cudaFree(arena);
    if (badIndexHost) (void)cudaFreeHost(badIndexHost);
    if (done) (void)cudaEventDestroy(done);
    if (own) (void)cudaStreamDestroy(own);
    (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
  }
};

namespace {

// Sizes of the parts of the arena, each rounded up to 256 bytes.
struct Layout {
  size_t residual, work, out, sum, scratch, send, recv, packed, bad;
  size_t total() const { return residual + work + out + sum + scratch + send + recv + packed + bad; }
};
size_t round256(size_t b) { return (b + 255) / 256 * 256; }

Layout layoutFor(const weftCompressor* c) {
  Layout l{};
  const size_t n = c->count, ranks = size_t(c->nranks);
  l.residual = c->errorFeedback ? round256((n + c->chunkElems) * sizeof(float)) : 0;
  l.work = round256(n * sizeof(float));
  l.out = c->type == weftFloat32 ? 0 : round256(n * sizeof(float));
  if (c->kind == weftCompressTopK) {
    const size_t pairsBytes = topkCount(n, c->ratio) * sizeof(TopKPair);
    l.scratch = round256(device::topkScratchBytes(n));
    l.send = round256(pairsBytes);
    l.recv = round256(pairsBytes * ranks);
  } else {
    const size_t block = signBlockBytes(c->chunkElems);
    l.sum = round256(c->chunkElems * sizeof(float));
    l.scratch = round256(device::signScratchBytes(c->chunkElems, c->nranks));
    l.send = round256(block * ranks);
    l.recv = round256(block * ranks);
    l.packed = round256(block);
  }
  l.bad = 256;
  return l;
}

// The first device call: the arena on the buffers' GPU, the residual
// (zero, or what the caller restored into the host copy) moved into it.
void allocate(weftCompressor* c, DeviceCompressor& d, int dev) {
  d.device = dev;
  cuda::DeviceGuard guard(dev);
  device::preloadCompressionKernels();
  const Layout l = layoutFor(c);
  WEFT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d.arena), l.total()));
  char* p = d.arena;
  auto take = [&p](size_t bytes) {
    char* at = bytes ? p : nullptr;
    p += bytes;
    return at;
  };
  d.residual = reinterpret_cast<float*>(take(l.residual));
  d.work = reinterpret_cast<float*>(take(l.work));
  d.out = reinterpret_cast<float*>(take(l.out));
  d.sum = reinterpret_cast<float*>(take(l.sum));
  d.scratch = take(l.scratch);
  d.sendBytes = reinterpret_cast<unsigned char*>(take(l.send));
  d.recvBytes = reinterpret_cast<unsigned char*>(take(l.recv));
  d.packed = reinterpret_cast<unsigned char*>(take(l.packed));
  d.badIndex = reinterpret_cast<int*>(take(l.bad));
  cuda::fillDeviceNow(d.badIndex, sizeof(int));
  WEFT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&d.badIndexHost), sizeof(int), cudaHostAllocDefault));
  *d.badIndexHost = 0;
  d.comm = c->comm;
  d.count = c->count;
  WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&d.done, cudaEventDisableTiming));
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&d.own, cudaStreamNonBlocking));
  d.residualCount = c->residual.size();
  if (d.residual)
    cuda::fillDeviceNow(d.residual, d.residualCount * sizeof(float), c->residual.data(),
                        d.residualCount * sizeof(float));
  std::vector<float>().swap(c->residual);  // from now on the residual lives on the device
}

DeviceCompressor& deviceSideOn(weftCompressor* c, int dev) {
  if (!c->device) {
    auto d = std::make_shared<DeviceCompressor>();
    allocate(c, *d, dev);
    c->device = std::move(d);
    WEFT_INFO(kColl, "compressed AllReduce: %s compressor on GPU %d", kindName(c->kind), dev);
  } else if (c->device->device != dev) {
    raise(weftInvalidUsage, "compressed AllReduce: the compressor's device memory is on GPU %d but the buffers are "
          "on GPU %d; use one compressor per GPU", c->device->device, dev);
  }
  return *c->device;
}

DeviceCompressor& deviceSide(weftCompressor* c, const void* send, const void* recv) {
  return deviceSideOn(c, cuda::callDevice(send ? send : recv));
}

void collective(weftResult_t rc, const char* what) {
  if (rc != weftSuccess) raise(rc, "compressed AllReduce (device): %s failed: %s", what, weftGetErrorString(rc));
}

// A CUDA host callback (no CUDA calls allowed): a peer that sent an index
// beyond count fails the communicator, as the host path fails the call.
void CUDART_CB reportBadIndex(void* arg) {
  auto* d = static_cast<DeviceCompressor*>(arg);
  if (*d->badIndexHost == 0) return;
  d->comm->setAsyncError(weftInternalError, "compressed AllReduce (device): a peer sent a TopK index beyond count " +
                                                std::to_string(d->count));
}

void runTopK(weftCompressor* c, DeviceCompressor& d, const void* send, void* recv, cudaStream_t s) {
  const size_t n = c->count, k = topkCount(n, c->ratio), blockBytes = k * sizeof(TopKPair);
  device::loadInput(d.work, send, c->type, c->errorFeedback ? d.residual : nullptr, n, s);
  auto* mine = reinterpret_cast<TopKPair*>(d.sendBytes);
  device::topkSelect(d.work, n, k, d.scratch, mine, s);
  collective(weftAllGather(d.sendBytes, d.recvBytes, blockBytes, weftUint8, c->comm, s),
             "the AllGather of (index, value) pairs");
  c->bytesSent += (c->nranks - 1) * blockBytes;
  if (c->errorFeedback) device::topkKeepUnsent(d.residual, d.work, n, mine, k, s);
  float* out = c->type == weftFloat32 ? static_cast<float*>(recv) : d.out;
  device::topkScatterAdd(out, n, reinterpret_cast<const TopKPair*>(d.recvBytes), k, c->nranks, d.badIndex, s);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(d.badIndexHost, d.badIndex, sizeof(int), cudaMemcpyDeviceToHost, s));
  WEFT_CUDA_CHECK(cudaLaunchHostFunc(s, reportBadIndex, &d));
  device::storeOutput(recv, out, c->type, n, s);
}

void runSign(weftCompressor* c, DeviceCompressor& d, const void* send, void* recv, cudaStream_t s) {
  const size_t n = c->count, chunk = c->chunkElems, block = signBlockBytes(chunk);
  const int ranks = c->nranks;
  float* residual = c->errorFeedback ? d.residual : nullptr;
  device::loadInput(d.work, send, c->type, residual, n, s);
  // Phase 1: every chunk, packed, to its owner.
  device::signPack(d.work, n, chunk, ranks, d.sendBytes, block, d.scratch, s);
  collective(weftAlltoAll(d.sendBytes, d.recvBytes, block, weftUint8, c->comm, s), "the AlltoAll of sign-packed chunks");
  c->bytesSent += (ranks - 1) * block;
  if (residual) device::signResidual(residual, d.work, n, chunk, d.sendBytes, block, s);
  // The owner's sum of the decoded chunks plus its own residual, packed again.
  const size_t off = std::min(n, size_t(c->rank) * chunk), mineLen = std::min(chunk, n - off);
  float* ownerResidual = residual ? residual + n : nullptr;
  device::signSumBlocks(d.sum, mineLen, d.recvBytes, block, ranks, ownerResidual, s);
  device::signPack(d.sum, mineLen, chunk, 1, d.packed, block, d.scratch, s);
  if (ownerResidual) device::signResidual(ownerResidual, d.sum, mineLen, chunk, d.packed, block, s);
  // Phase 2: the packed sums to every rank.
  collective(weftAllGather(d.packed, d.recvBytes, block, weftUint8, c->comm, s), "the AllGather of packed chunk sums");
  c->bytesSent += (ranks - 1) * block;
  float* out = c->type == weftFloat32 ? static_cast<float*>(recv) : d.out;
  device::signUnpack(out, n, chunk, d.recvBytes, block, s);
  device::storeOutput(recv, out, c->type, n, s);
}

}  // namespace

void runCompressedOnDevice(weftCompressor* c, const void* send, void* recv, weftStream_t stream) {
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->count == 0) return;
  if (c->kind != weftCompressTopK && c->kind != weftCompressSign)
    raise(weftInternalError, "compressed AllReduce (device): compressor kind %s", kindName(c->kind));
  DeviceCompressor& d = deviceSide(c, send, recv);
  cuda::DeviceGuard guard(d.device);
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // The scratch is reused: a call on another stream than the last one
  // starts after the last one ends.
  if (d.used) WEFT_CUDA_CHECK(cudaStreamWaitEvent(s, d.done, 0));
  if (c->kind == weftCompressTopK)
    runTopK(c, d, send, recv, s);
  else
    runSign(c, d, send, recv, s);
  WEFT_CUDA_CHECK(cudaEventRecord(d.done, s));
  d.used = true;
}

void prepareCompressorOnDevice(weftCompressor* c, int device) {
  std::lock_guard<std::mutex> lock(c->mutex);
  if (c->count) deviceSideOn(c, device);
}

float* deviceResidual(weftCompressor* c, size_t* count) {
  *count = c->device ? c->device->residualCount : 0;
  return c->device ? c->device->residual : nullptr;
}

void resetDeviceResidual(weftCompressor* c) {
  DeviceCompressor* d = c->device.get();
  if (!d || !d->residual) return;
  cuda::DeviceGuard guard(d->device);
  if (d->used) WEFT_CUDA_CHECK(cudaStreamWaitEvent(d->own, d->done, 0));
  WEFT_CUDA_CHECK(cudaMemsetAsync(d->residual, 0, d->residualCount * sizeof(float), d->own));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(d->own));
}

#else  // !WEFT_HAVE_CUDA

struct DeviceCompressor {};

void runCompressedOnDevice(weftCompressor*, const void*, void*, weftStream_t) {
  raise(weftInvalidUsage, "device buffers need weft built with CUDA (WEFT_ENABLE_CUDA)");
}
void prepareCompressorOnDevice(weftCompressor*, int) {
  raise(weftInvalidUsage, "device buffers need weft built with CUDA (WEFT_ENABLE_CUDA)");
}
float* deviceResidual(weftCompressor*, size_t* count) {
  *count = 0;
  return nullptr;
}
void resetDeviceResidual(weftCompressor*) {}

#endif

}  // namespace weft::compress
