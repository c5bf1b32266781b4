#include "src/exec/cuda/device_route.h"

#include "src/core/comm.h"
#include "src/core/connections.h"
#include "src/core/diagnose.h"
#include "src/core/group.h"
#include "src/util/error.h"
#include "src/util/log.h"

#if WEFT_HAVE_CUDA
#include "src/exec/cuda/device_state.h"
#include "src/exec/cuda/runtime.h"
#endif

namespace weft::cuda {

#if WEFT_HAVE_CUDA

weftResult_t checkCallBuffers(const char* fn, const void* send, const void* recv, weftStream_t stream,
                              bool* device) {
  *device = false;
  const BufferKind ks = classify(send), kr = classify(recv);
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

DeviceState& stateOf(weftComm* comm, const void* anyDevicePtr) {
  if (!comm->deviceState) {
    cudaPointerAttributes a{};
    WEFT_CUDA_CHECK(cudaPointerGetAttributes(&a, anyDevicePtr));
    int dev = a.device;
    if (a.type == cudaMemoryTypeManaged || dev < 0) WEFT_CUDA_CHECK(cudaGetDevice(&dev));
    comm->deviceState = std::make_shared<DeviceState>(dev, &comm->aborting, comm->rank);
    WEFT_INFO(kInit, "rank %d: device path on GPU %d", comm->rank, dev);
  }
  return *static_cast<DeviceState*>(comm->deviceState.get());
}

const void* firstPointer(std::span<const BufferBinding> b) {
  for (const auto& x : b) {
    if (x.send) return x.send;
    if (x.recv) return x.recv;
  }
  return nullptr;
}

}  // namespace

void runDevicePlan(weftComm* comm, const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep,
                   std::span<const BufferBinding> bindings, const kernels::RedOp& op, weftStream_t stream) {
  const void* any = firstPointer(bindings);
  if (!any) return;  // nothing to move (all counts zero)
  DeviceState& st = stateOf(comm, any);
  comm->connections->ensure(p, /*device=*/true);
  FifoLookup fifos;
  Connections* conns = comm->connections.get();
  fifos.send = [conns](int peer, int conn) { return conns->send(peer, conn, true); };
  fifos.recv = [conns](int peer, int conn) { return conns->recv(peer, conn, true); };
  // A device timeout is reported from a CUDA host callback: the diagnosis
  // (bounded, no CUDA call) names the ranks that had not entered the call.
  ErrorSink sink = [comm](weftResult_t code, const std::string& why) {
    comm->setAsyncError(code, code == weftTimeout ? why + " " + explainTimeout(comm) : why);
  };
  st.run(p, keep, bindings, op, fifos, comm->timeoutMs, static_cast<cudaStream_t>(stream), std::move(sink));
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
  DeviceState& st = stateOf(comm, src);
  void* dst = st.stage(bytes, static_cast<cudaStream_t>(stream));
  WEFT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
  return dst;
}

#else  // !WEFT_HAVE_CUDA

int currentDevice() { return -1; }

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

#endif

}  // namespace weft::cuda
