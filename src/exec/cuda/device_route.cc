#include "src/exec/cuda/device_route.h"

#include "src/core/comm.h"
#include "src/core/connections.h"
#include "src/core/diagnose.h"
#include "src/core/group.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

#if WEFT_HAVE_CUDA
#include "src/exec/cuda/device_plan.h"
#include "src/exec/cuda/device_state.h"
#include "src/exec/cuda/local_copies.h"
#include "src/exec/cuda/runtime.h"
#endif

namespace weft::cuda {

#if WEFT_HAVE_CUDA

weftResult_t checkCallBuffers(const char* fn, const void* send, const void* recv, weftStream_t stream,
                              bool* device) {
  *device = false;
  const BufferKind ks = classify(send), kr = recv == send ? ks : classify(recv);
  const bool ds = runsOnDevice(ks), dr = runsOnDevice(kr);
  if ((send && recv && ds != dr)) {
    WEFT_WARN("%s: sendbuff %p is %s memory but recvbuff %p is %s memory: one call must use device buffers or "
              "host buffers, not both",
              fn, send, bufferKindName(ks), static_cast<void*>(const_cast<void*>(recv)), bufferKindName(kr));
    return weftInvalidArgument;
  }
  if (ds || dr) {
    *device = true;
    return weftSuccess;
  }
  return checkHostStream(stream);
}

namespace {

// Ranks of this process that use `device` (threads as ranks): the legacy
// default stream cannot serve more than one of them.
int ranksOnGpu(const weftComm* comm, int device) {
  const weft::PeerInfo* me = comm->rank < int(comm->peers.size()) ? &comm->peers[comm->rank] : nullptr;
  if (!me) return 1;
  int n = 0;
  for (const auto& p : comm->peers)
    n += p.hostHash == me->hostHash && p.processHash == me->processHash && p.pid == me->pid && p.cudaDev == device;
  return n > 0 ? n : 1;
}

}  // namespace

int callDevice(const void* p) {
  cudaPointerAttributes a{};
  WEFT_CUDA_CHECK(cudaPointerGetAttributes(&a, p));
  int dev = a.device;
  if (a.type == cudaMemoryTypeManaged || dev < 0) WEFT_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

namespace {

DeviceState* existingState(weftComm* comm) { return static_cast<DeviceState*>(comm->deviceState.get()); }

DeviceState& makeState(weftComm* comm, int dev) {
  const int64_t arena = comm->config.get(settings::kDeviceImageArena);
  const int64_t scratch = comm->config.get(settings::kDeviceScratch);
  comm->deviceState = std::make_shared<DeviceState>(dev, &comm->aborting, comm->rank, ranksOnGpu(comm, dev),
                                                    arena > 0 ? static_cast<size_t>(arena) : 0,
                                                    scratch > 0 ? static_cast<size_t>(scratch) : 0);
  WEFT_INFO(kInit, "rank %d: device path on GPU %d", comm->rank, dev);
  return *existingState(comm);
}

DeviceState& stateOf(weftComm* comm, const void* anyDevicePtr, bool captured) {
  if (DeviceState* st = existingState(comm)) return *st;
  if (captured) {
    const std::string why = captureRefusal(CaptureState::Active, {.stateReady = false});
    WEFT_WARN("rank %d: %s", comm->rank, why.c_str());
    raise(weftInvalidUsage, "%s", why.c_str());
  }
  return makeState(comm, callDevice(anyDevicePtr));
}

const void* firstPointer(std::span<const BufferBinding> b) {
  for (const auto& x : b) {
    if (x.send) return x.send;
    if (x.recv) return x.recv;
  }
  return nullptr;
}

FifoLookup deviceFifos(weftComm* comm) {
  FifoLookup fifos;
  Connections* conns = comm->connections.get();
  fifos.send = [conns](int peer, int conn) { return conns->send(peer, conn, true); };
  fifos.recv = [conns](int peer, int conn) { return conns->recv(peer, conn, true); };
  return fifos;
}

// A failure the kernel left in the status word reaches the communicator's
// async error; a timeout's text names the ranks that had not entered the call.
void reportDeviceFailure(weftComm* comm, DeviceState& st) {
  st.poll([comm](weftResult_t code, const std::string& why) {
    comm->setAsyncError(code, code == weftTimeout ? why + " " + explainTimeout(comm) : why);
  });
}

// Refuses a call after a device call of comm failed (reported by its
// status word, when it has device state yet).
void refuseAfterFailure(weftComm* comm) {
  if (DeviceState* st = existingState(comm)) reportDeviceFailure(comm, *st);
  if (weftResult_t e = comm->getAsyncError())
    raise(e, "rank %d: an earlier device call failed: %s", comm->rank, weftGetErrorString(e));
}

// Copies on the caller's stream (local_copies.h), on the GPU of the
// communicator when the caller's current device is another.
void copyOnStream(weftComm* comm, const std::vector<LocalCopy>& copies, cudaStream_t s) {
  if (copies.empty()) return;
  DeviceGuard guard(comm->cudaDev >= 0 ? comm->cudaDev : callDevice(copies.front().src));
  for (const LocalCopy& c : copies) WEFT_CUDA_CHECK(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault, s));
}

}  // namespace

void runDevicePlan(weftComm* comm, const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                   std::span<const BufferBinding> bindings, const kernels::RedOp& op, weftStream_t stream) {
  const void* any = firstPointer(bindings);
  if (!any) return;  // nothing to move (all counts zero)
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (std::optional<std::vector<LocalCopy>> copies = localCopiesOf(p, bindings, op)) {
    refuseAfterFailure(comm);
    copyOnStream(comm, *copies, s);
    return;
  }
  const bool captured = captureStateOf(s, nullptr) == CaptureState::Active;
  DeviceState& st = stateOf(comm, any, captured);
  refuseAfterFailure(comm);
  if (!captured) {
    comm->connections->ensure(p, /*device=*/true);
  } else if (!comm->connections->connectedFor(p, /*device=*/true)) {
    const std::string why = captureRefusal(CaptureState::Active, {.fifosMapped = false});
    WEFT_WARN("rank %d: %s", comm->rank, why.c_str());
    raise(weftInvalidUsage, "%s", why.c_str());
  }
  st.run(p, keep, bindings, op, deviceFifos(comm), comm->timeoutMs, s);
}

void pollDeviceStatus(weftComm* comm) {
  if (DeviceState* st = existingState(comm)) {
    try {
      reportDeviceFailure(comm, *st);
    } catch (...) {
      // Polling is best effort (a query of a context that is gone).
    }
  }
}

void setUpDeviceAtInit(weftComm* comm, std::span<const plan::Plan> rings) {
  if (comm->cudaDev < 0 || !gpuAvailable() || existingState(comm)) return;
  DeviceState& st = makeState(comm, comm->cudaDev);
  for (const plan::Plan& ring : rings) st.prepare(ring, deviceFifos(comm));
}

void warmUpDevice(weftComm* comm, std::span<const plan::Plan> plans) {
  if (comm->cudaDev < 0 || !gpuAvailable()) return;
  DeviceState* st = existingState(comm);
  if (!st) st = &makeState(comm, comm->cudaDev);
  for (const plan::Plan& p : plans) st->prepare(p, deviceFifos(comm));
}

int residentDeviceCtas(int device) {
  if (device < 0 || !gpuAvailable()) return 0;
  try {
    return residentInterpreterCtas(device);
  } catch (const Error& e) {
    WEFT_WARN("GPU %d: resident CTAs unknown (%s); ranks sharing it keep few device channels", device, e.what());
    return 0;
  }
}

int currentDevice() {
  if (!gpuAvailable()) return -1;
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return d;
}

void useDevice(int device) {
  // Without a GPU the number only labels the rank (weftCommCuDevice), as in
  // a host-only build.
  if (device < 0 || !gpuAvailable()) return;
  WEFT_CUDA_CHECK(cudaSetDevice(device));
}

const void* deviceStageCopy(weftComm* comm, const void* src, size_t bytes, weftStream_t stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  DeviceState& st = stateOf(comm, src, captureStateOf(s, nullptr) == CaptureState::Active);
  return st.stage(src, bytes, s);
}

#else  // !WEFT_HAVE_CUDA

int currentDevice() { return -1; }

int residentDeviceCtas(int) { return 0; }

// Host-only builds accept a devlist for NCCL compatibility: it only labels
// the ranks (weftCommCuDevice), nothing runs on a GPU.
void useDevice(int) {}

weftResult_t checkCallBuffers(const char*, const void*, const void*, weftStream_t stream, bool* device) {
  *device = false;
  return checkHostStream(stream);
}

void runDevicePlan(weftComm*, const plan::Plan&, const std::shared_ptr<const plan::Plan>&,
                   std::span<const BufferBinding>, const kernels::RedOp&, weftStream_t) {
  raise(weftInvalidUsage, "device buffers need weft built with CUDA (WEFT_ENABLE_CUDA)");
}

const void* deviceStageCopy(weftComm*, const void*, size_t, weftStream_t) {
  raise(weftInvalidUsage, "device buffers need weft built with CUDA (WEFT_ENABLE_CUDA)");
}

void pollDeviceStatus(weftComm*) {}

void setUpDeviceAtInit(weftComm*, std::span<const plan::Plan>) {}

void warmUpDevice(weftComm*, std::span<const plan::Plan>) {}

#endif

}  // namespace weft::cuda
