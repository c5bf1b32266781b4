#include "src/exec/cuda/device_state.h"

#include <cstring>

#include "src/exec/cuda/device_image.h"
#include "src/exec/cuda/device_plan.h"
#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::cuda {
namespace {

// Runs on a CUDA host-callback thread once the kernel is done: no CUDA calls
// allowed here, only reading the pinned status and reporting.
struct StatusCheck {
  DevStatus* status;
  ErrorSink sink;
  int rank;
  bool* reported;
  BellRinger* ringer;
};

void CUDART_CB checkStatus(void* arg) {
  auto* c = static_cast<StatusCheck*>(arg);
  c->ringer->workEnded();
  const volatile DevStatus* s = c->status;
  if (s->code != 0 && !*c->reported && c->sink) {
    *c->reported = true;
    std::string why = "rank " + std::to_string(c->rank) + ": device executor stopped in channel " +
                      std::to_string(s->channel) + " step " + std::to_string(s->step) + ": ";
    switch (s->code) {
      case weftTimeout: why += "no progress within WEFT_TIMEOUT_MS"; break;
      case weftRemoteError: why += "aborted, or a connection failed"; break;
      case weftInternalError:
        why += "received " + std::to_string(s->detail) +
               " bytes where the plan expects another size (mismatched collective across ranks?)";
        break;
      default: why += "error " + std::to_string(s->code); break;
    }
    try {
      c->sink(static_cast<weftResult_t>(s->code), why);
    } catch (...) {
      // Nothing may escape a CUDA callback.
    }
  }
  delete c;
}

}  // namespace

DeviceState::DeviceState(int device, const std::atomic<bool>* abortFlag, int rank) : device_(device), rank_(rank) {
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  WEFT_CUDA_CHECK(cudaHostAlloc(&p, sizeof(DevStatus), cudaHostAllocMapped | cudaHostAllocPortable));
  statusHost_ = static_cast<DevStatus*>(p);
  memset(statusHost_, 0, sizeof(DevStatus));
  void* d = nullptr;
  WEFT_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
  statusDev_ = static_cast<DevStatus*>(d);
  static_assert(sizeof(std::atomic<bool>) == 1, "the kernel reads the abort flag as one byte");
  abortMapping_ = HostMapping(abortFlag, sizeof(*abortFlag));
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&setupStream_, cudaStreamNonBlocking));
  abortDev_ = static_cast<const volatile uint8_t*>(abortMapping_.device(abortFlag));
}

DeviceState::~DeviceState() {
  (void)cudaSetDevice(device_);
  for (auto& [stream, ev] : lastWork_) {
    (void)cudaEventSynchronize(ev);
    (void)cudaEventDestroy(ev);
  }
  for (auto& [plan, u] : plans_) (void)cudaFree(u.blob);
  if (scratch_) (void)cudaFreeAsync(scratch_, nullptr);
  if (stage_) (void)cudaFreeAsync(stage_, nullptr);
  if (statusHost_) (void)cudaFreeHost(statusHost_);
  if (setupStream_) (void)cudaStreamDestroy(setupStream_);
  (void)cudaGetLastError();
}

DevFifo DeviceState::fifoView(const FifoEnd& e) {
  auto it = fifoViews_.find(e.hdr);
  if (it != fifoViews_.end()) return it->second;
  cudaPointerAttributes a{};
  const bool onDevice = cudaPointerGetAttributes(&a, e.hdr) == cudaSuccess &&
                        (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
  (void)cudaGetLastError();
  FifoHeader h;
  char* hdrDev;
  char* dataDev;
  if (onDevice) {
    // p2p: the FIFO lives in (possibly another) GPU's memory, already
    // addressable; its geometry is read back once.
    // On a private non-blocking stream: a plain cudaMemcpy would queue on the
    // legacy stream and wait for kernels of peers that wait for this rank.
    WEFT_CUDA_CHECK(cudaMemcpyAsync(&h, e.hdr, sizeof(h), cudaMemcpyDefault, setupStream_));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(setupStream_));
    hdrDev = reinterpret_cast<char*>(e.hdr);
    dataDev = e.data;
  } else {
    memcpy(static_cast<void*>(&h), e.hdr, sizeof(h));
    // Host-memory FIFOs may have a host mover (proxy) sleeping on these.
    ringer_.add(e.consumerBell);
    ringer_.add(e.producerBell);
    const size_t slots = size_t(h.nSlots) * h.slotBytes;
    const char* hdrHost = reinterpret_cast<const char*>(e.hdr);
    if (e.data == hdrHost + h.dataOffset) {
      mappings_.emplace_back(hdrHost, h.dataOffset + slots);
      hdrDev = static_cast<char*>(mappings_.back().device(hdrHost));
      dataDev = static_cast<char*>(mappings_.back().device(e.data));
    } else {
      mappings_.emplace_back(hdrHost, sizeof(FifoHeader));
      hdrDev = static_cast<char*>(mappings_.back().device(hdrHost));
      cudaPointerAttributes d{};
      const bool slotsOnDevice = cudaPointerGetAttributes(&d, e.data) == cudaSuccess && d.type == cudaMemoryTypeDevice;
      (void)cudaGetLastError();
      if (slotsOnDevice) {
        // GPUDirect RDMA (ib): the HCA moves the slots in and out of this
        // GPU's memory; only the header is host memory, for the proxy.
        if (d.device != device_)
          raise(weftInvalidUsage,
                "device executor: a FIFO's slots are on GPU %d but this communicator's device work runs on GPU %d "
                "(the rank's CUDA device at init must be the device of its buffers)",
                d.device, device_);
        dataDev = e.data;
      } else {
        mappings_.emplace_back(e.data, slots);
        dataDev = static_cast<char*>(mappings_.back().device(e.data));
      }
    }
  }
  if (h.magic != kFifoMagic || h.nSlots == 0 || h.nSlots > kFifoMaxSlots)
    raise(weftInternalError, "device executor: FIFO at %p is not initialised", static_cast<void*>(e.hdr));
  auto* hd = reinterpret_cast<FifoHeader*>(hdrDev);
  DevFifo f{};
  f.posted = reinterpret_cast<uint32_t*>(&hd->posted);
  f.consumed = reinterpret_cast<uint32_t*>(&hd->consumed);
  f.failed = reinterpret_cast<uint32_t*>(&hd->failed);
  f.sizes = hd->sizes;
  f.data = dataDev;
  f.slotBytes = h.slotBytes;
  f.nSlots = h.nSlots;
  fifoViews_[e.hdr] = f;
  return f;
}

DeviceState::HostImage DeviceState::buildImage(const plan::Plan& p, const FifoLookup& fifos) {
  DeviceImage d = buildDeviceImage(p, [&](bool send, int peer, int conn) {
    return fifoView(send ? fifos.send(peer, conn) : fifos.recv(peer, conn));
  });
  return {std::move(d.channels), std::move(d.steps), std::move(d.fifos)};
}

namespace {
size_t alignUp(size_t n) { return (n + 255) / 256 * 256; }
}  // namespace

// The plan's device image: from the cache when `keep` still owns it, else
// built and copied in stream order (cached when `keep` is set; otherwise
// *temporary is set and the caller frees it after the launch).
DeviceState::Uploaded DeviceState::upload(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                                          const FifoLookup& fifos, cudaStream_t stream, bool* temporary) {
  auto it = keep ? plans_.find(&p) : plans_.end();
  if (it != plans_.end() && it->second.keep == keep) return it->second;
  Uploaded u;
  HostImage img = buildImage(p, fifos);
  const size_t chBytes = alignUp(img.channels.size() * sizeof(DevChannel));
  const size_t stBytes = alignUp(img.steps.size() * sizeof(DevStep));
  const size_t fiBytes = img.fifos.size() * sizeof(DevFifo);
  std::vector<char> host(chBytes + stBytes + fiBytes);
  memcpy(host.data(), img.channels.data(), img.channels.size() * sizeof(DevChannel));
  memcpy(host.data() + chBytes, img.steps.data(), img.steps.size() * sizeof(DevStep));
  memcpy(host.data() + chBytes + stBytes, img.fifos.data(), fiBytes);
  void* blob = nullptr;
  if (keep) {
    // No device-wide synchronisation here (see the scratch buffer in run): the copy is
    // ordered on the caller's stream, before the kernel that reads it.
    WEFT_CUDA_CHECK(cudaMalloc(&blob, host.size()));
    WEFT_CUDA_CHECK(cudaMemcpyAsync(blob, host.data(), host.size(), cudaMemcpyHostToDevice, stream));
  } else {
    // An uncached plan (grouped point-to-point) lives as long as its
    // launch, in stream order.
    *temporary = true;
    WEFT_CUDA_CHECK(cudaMallocAsync(&blob, host.size(), stream));
    WEFT_CUDA_CHECK(cudaMemcpyAsync(blob, host.data(), host.size(), cudaMemcpyHostToDevice, stream));
  }
  u.keep = keep;
  u.blob = static_cast<char*>(blob);
  u.channels = reinterpret_cast<const DevChannel*>(u.blob);
  u.steps = reinterpret_cast<const DevStep*>(u.blob + chBytes);
  u.fifos = reinterpret_cast<const DevFifo*>(u.blob + chBytes + stBytes);
  u.nChannels = static_cast<int>(p.channels.size());
  if (keep) {
    if (it != plans_.end()) (void)cudaFree(it->second.blob);  // a stale entry at a reused address
    plans_[&p] = u;
  }
  return u;
}

void DeviceState::run(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                      std::span<const BufferBinding> b, const kernels::RedOp& op, const FifoLookup& fifos,
                      int64_t timeoutMs, cudaStream_t stream, ErrorSink onError) {
  WEFT_CUDA_CHECK(cudaSetDevice(device_));
  const int nChannels = static_cast<int>(p.channels.size());
  if (nChannels == 0) return;
  if (nChannels > kMaxDeviceChannels)
    raise(weftInvalidUsage, "device executor: %d channels, at most %d", nChannels, kMaxDeviceChannels);
  if (b.size() > static_cast<size_t>(kMaxDeviceBindings))
    raise(weftInvalidUsage, "device executor: %zu grouped calls in one group, at most %d with device buffers",
          b.size(), kMaxDeviceBindings);

  bool temporary = false;
  Uploaded u = upload(p, keep, fifos, stream, &temporary);

  const size_t scratchBytes = p.scratchElems * p.elemSize;
  if (scratchBytes > scratchBytes_) {
    // Stream-ordered: cudaFree would wait for the whole device, where a
    // peer rank's kernel may be spinning until this rank's kernel runs.
    if (scratch_) WEFT_CUDA_CHECK(cudaFreeAsync(scratch_, stream));
    scratch_ = nullptr;
    WEFT_CUDA_CHECK(cudaMallocAsync(&scratch_, scratchBytes, stream));
    scratchBytes_ = scratchBytes;
  }

  DevLaunch L{};
  L.channels = u.channels;
  L.steps = u.steps;
  L.fifos = u.fifos;
  L.scratch = scratch_;
  L.status = statusDev_;
  L.abortFlag = abortDev_;
  L.timeoutNs = timeoutMs > 0 ? static_cast<uint64_t>(timeoutMs) * 1000000ull : 0;
  L.elemSize = p.elemSize;
  L.sliceBytes = p.sliceBytes;
  L.nranks = op.nranks;
  L.type = op.type;
  L.opKind = static_cast<int32_t>(op.kind);
  memcpy(L.scalar, op.scalar, sizeof(L.scalar));
  L.nBindings = static_cast<int32_t>(b.size());
  for (size_t i = 0; i < b.size(); i++) L.bindings[i] = {b[i].send, b[i].recv};
  launchInterpreter(L, nChannels, stream);
  if (temporary) WEFT_CUDA_CHECK(cudaFreeAsync(u.blob, stream));
  afterLaunch(stream, std::move(onError));
}

void DeviceState::afterLaunch(cudaStream_t stream, ErrorSink onError) {
  auto* check = new StatusCheck{statusHost_, std::move(onError), rank_, &reported_, &ringer_};
  ringer_.workStarted();
  cudaError_t err = cudaLaunchHostFunc(stream, checkStatus, check);
  if (err != cudaSuccess) {
    ringer_.workEnded();
    delete check;
    WEFT_CUDA_CHECK(err);
  }
  cudaEvent_t& ev = lastWork_[stream];
  if (!ev) WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  WEFT_CUDA_CHECK(cudaEventRecord(ev, stream));
}

void* DeviceState::stage(size_t bytes, cudaStream_t stream) {
  if (bytes > stageBytes_) {
    if (stage_) WEFT_CUDA_CHECK(cudaFreeAsync(stage_, stream));
    stage_ = nullptr;
    WEFT_CUDA_CHECK(cudaMallocAsync(&stage_, bytes, stream));
    stageBytes_ = bytes;
  }
  return stage_;
}

}  // namespace weft::cuda
