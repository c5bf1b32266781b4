// C API: versions, errors, communicator lifecycle.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "src/core/api_guard.h"
#include "src/core/comm.h"
#include "src/core/diagnose.h"
#include "src/core/host_stream.h"
#include "src/core/launch.h"
#include "src/exec/cuda/device_route.h"
#include "src/util/abi_enum.h"
#include "src/util/clock.h"
#include "src/util/settings.h"

using namespace weft;

namespace {

int64_t idTimeoutMs() { return settings::get(settings::kTimeoutMs); }

// Waits (bounded) until no operation of comm is queued or running.
bool drain(weftComm* comm, int64_t timeoutMs) {
  auto idle = [comm] { return comm->inflight.load(std::memory_order_acquire) == 0; };
  const int64_t deadline = nowNs() + timeoutMs * 1000000;
  for (;;) {
    if (idle()) return true;
    const int64_t left = deadline - nowNs();
    if (left <= 0) return false;
    const uint32_t seen = comm->inflightBell.seq.load(std::memory_order_acquire);
    sleepUnless(&comm->inflightBell, seen, std::min<int64_t>(left, 10 * 1000 * 1000), idle);
  }
}

}  // namespace

extern "C" {

WEFT_API weftResult_t weftGetVersion(int* version) {
  if (!version) {
    WEFT_WARN("weftGetVersion: version is NULL");
    return weftInvalidArgument;
  }
  *version = WEFT_VERSION_CODE;
  return weftSuccess;
}

WEFT_API const char* weftGetErrorString(weftResult_t result) {
  switch (abiInt(result)) {  // any int from C: switched on as one
    case weftSuccess: return "no error";
    case weftUnhandledCudaError: return "unhandled cuda error (run with WEFT_DEBUG=WARN for details)";
    case weftSystemError: return "unhandled system error (run with WEFT_DEBUG=WARN for details)";
    case weftInternalError: return "internal error - please report this issue to the weft developers";
    case weftInvalidArgument: return "invalid argument (run with WEFT_DEBUG=WARN for details)";
    case weftInvalidUsage: return "invalid usage (run with WEFT_DEBUG=WARN for details)";
    case weftRemoteError: return "remote process exited or there was a network error";
    case weftInProgress: return "operation in progress";
    case weftTimeout: return "operation timed out (WEFT_TIMEOUT_MS)";
    default: return "unknown result code";
  }
}

WEFT_API const char* weftGetLastError(weftComm_t comm) {
  if (comm && isLiveComm(comm)) {
    std::lock_guard<std::mutex> lock(comm->errorMutex);
    if (!comm->lastError.empty()) {
      thread_local std::string copy;
      copy = comm->lastError;
      return copy.c_str();
    }
  }
  return lastError().c_str();
}

WEFT_API weftResult_t weftGetUniqueId(weftUniqueId* uniqueId) {
  return guarded([&] {
    if (!uniqueId) raise(weftInvalidArgument, "weftGetUniqueId: uniqueId is NULL");
    createUniqueId(uniqueId, idTimeoutMs());
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                             weftConfig_t* config) {
  return guarded([&] {
    if (!comm) raise(weftInvalidArgument, "weftCommInitRank: comm is NULL");
    *comm = nullptr;
    *comm = createComm(commId, nranks, rank, config);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank) {
  return weftCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

WEFT_API weftResult_t weftCommInitAll(weftComm_t* comms, int ndev, const int* devlist) {
  return guarded([&] {
    if (!comms) raise(weftInvalidArgument, "weftCommInitAll: comms is NULL");
    if (ndev < 1) raise(weftInvalidArgument, "weftCommInitAll: ndev=%d must be at least 1", ndev);
    weftUniqueId id;
    createUniqueId(&id, idTimeoutMs());
    std::vector<weftResult_t> results(ndev, weftSuccess);
    std::vector<std::string> errors(ndev);  // each rank's thread-local last error
    std::vector<std::thread> threads;
    for (int r = 0; r < ndev; r++)
      threads.emplace_back([&, r] {
        // Like NCCL: rank r runs on devlist[r] (the thread's current device
        // is what the communicator records and p2p uses).
        if (devlist) results[r] = guarded([&] {
          cuda::useDevice(devlist[r]);
          return weftSuccess;
        });
        if (results[r] == weftSuccess) results[r] = weftCommInitRank(&comms[r], ndev, id, r);
        if (results[r] == weftSuccess && devlist) comms[r]->cudaDev = devlist[r];
        if (results[r] != weftSuccess) errors[r] = weftGetLastError(nullptr);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < ndev; r++)
      if (results[r] != weftSuccess) {
        for (int k = 0; k < ndev; k++)
          if (results[k] == weftSuccess) weftCommAbort(comms[k]);
        // The ranks ran on threads of their own: their error texts must
        // reach the caller's weftGetLastError.
        raise(results[r], "weftCommInitAll: rank %d: %s", r, errors[r].c_str());
      }
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm, weftConfig_t* config) {
  if (weftResult_t r = checkComm(comm, "weftCommSplit")) return r;
  return guarded([&] {
    if (!newcomm) raise(weftInvalidArgument, "weftCommSplit: newcomm is NULL");
    if (color < 0 && color != WEFT_SPLIT_NOCOLOR)
      raise(weftInvalidArgument, "weftCommSplit: color=%d must be >= 0 or WEFT_SPLIT_NOCOLOR", color);
    if (weftResult_t e = comm->getAsyncError()) return e;
    *newcomm = nullptr;
    struct Entry {
      int color, key, rank;
    };
    std::vector<Entry> all(comm->nranks);
    all[comm->rank] = {color, key, comm->rank};
    comm->bootstrap->allGather(all.data(), sizeof(Entry));
    const uint64_t tag = kTagSplit | comm->splitSeq++;
    if (color == WEFT_SPLIT_NOCOLOR) return weftSuccess;
    std::vector<Entry> group;
    for (const Entry& e : all)
      if (e.color == color) group.push_back(e);
    std::stable_sort(group.begin(), group.end(),
                     [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
    int newRank = 0;
    while (group[newRank].rank != comm->rank) newRank++;
    // The group's lowest parent rank creates the id and hands it out.
    int leader = comm->nranks;
    for (const Entry& e : group) leader = std::min(leader, e.rank);
    weftUniqueId id;
    if (comm->rank == leader) {
      createUniqueId(&id, comm->timeoutMs);
      for (const Entry& e : group)
        if (e.rank != leader) comm->bootstrap->send(e.rank, tag, &id, sizeof(id));
    } else {
      comm->bootstrap->recv(leader, tag, &id, sizeof(id));
    }
    weftConfig_t cfg = WEFT_CONFIG_INITIALIZER;
    if (config) cfg = *config;
    if (cfg.timeoutMs == WEFT_CONFIG_UNDEF_INT) cfg.timeoutMs = static_cast<int>(comm->timeoutMs);
    *newcomm = createComm(id, static_cast<int>(group.size()), newRank, &cfg);
    (*newcomm)->cudaDev = comm->cudaDev;
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommFinalize(weftComm_t comm) {
  if (weftResult_t r = checkComm(comm, "weftCommFinalize")) return r;
  if (!drain(comm, comm->timeoutMs)) {
    WEFT_WARN("weftCommFinalize: operations still running after %ld ms", static_cast<long>(comm->timeoutMs));
    return weftTimeout;
  }
  return comm->getAsyncError();
}

WEFT_API weftResult_t weftCommDestroy(weftComm_t comm) {
  if (weftResult_t r = checkComm(comm, "weftCommDestroy")) return r;
  return guarded([&] {
    if (!drain(comm, comm->timeoutMs)) {
      // Work is stuck: stop it rather than free memory it still uses.
      comm->aborting = true;
      ring(comm->bell);
      comm->bootstrap->abort();
      drain(comm, comm->timeoutMs);
    }
    unregisterComm(comm);
    comm->bootstrap->shutdown();
    delete comm;
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommAbort(weftComm_t comm) {
  if (weftResult_t r = checkComm(comm, "weftCommAbort")) return r;
  return guarded([&] {
    // A kernel failure the status word holds is the cause worth keeping.
    cuda::pollDeviceStatus(comm);
    comm->aborting = true;
    comm->setAsyncError(weftRemoteError, "communicator aborted");
    ring(comm->bell);
    comm->bootstrap->abort();
    // In-flight work sees the flag within one sleep slice of the executor.
    drain(comm, comm->timeoutMs);
    unregisterComm(comm);
    delete comm;
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommWarmup(weftComm_t comm) {
  if (weftResult_t r = checkComm(comm, "weftCommWarmup")) return r;
  if (weftResult_t e = comm->getAsyncError()) {
    WEFT_WARN("weftCommWarmup: the communicator already failed: %s", weftGetErrorString(e));
    return e;
  }
  return guarded([&] {
    setLogRank(comm->rank);
    warmUpDevicePath(comm);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError) {
  if (weftResult_t r = checkComm(comm, "weftCommGetAsyncError")) return r;
  if (!asyncError) {
    WEFT_WARN("weftCommGetAsyncError: asyncError is NULL");
    return weftInvalidArgument;
  }
  cuda::pollDeviceStatus(comm);
  *asyncError = comm->getAsyncError();
  return weftSuccess;
}

// Safe while another thread is blocked in a call on comm: the gather takes
// no lock of the call path, and every rank answers from its bootstrap thread.
WEFT_API weftResult_t weftCommDiagnose(weftComm_t comm, char* buf, size_t len) {
  if (weftResult_t r = checkComm(comm, "weftCommDiagnose")) return r;
  if (!buf || len == 0) {
    WEFT_WARN("weftCommDiagnose: buf is %s: give a buffer for the report (4096 bytes hold about 30 ranks)",
              buf ? "0 bytes long" : "NULL");
    return weftInvalidArgument;
  }
  return guarded([&] {
    setLogRank(comm->rank);
    const std::string report = diagnoseComm(comm, "on request (weftCommDiagnose)");
    size_t n = std::min(report.size(), len - 1);
    memcpy(buf, report.data(), n);
    // A cut report ends in "..." where there is room for it.
    if (n < report.size() && n >= 3) memcpy(buf + n - 3, "...", 3);
    buf[n] = '\0';
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommCount(const weftComm_t comm, int* count) {
  if (weftResult_t r = checkComm(comm, "weftCommCount")) return r;
  if (!count) return weftInvalidArgument;
  *count = comm->nranks;
  return weftSuccess;
}

WEFT_API weftResult_t weftCommCuDevice(const weftComm_t comm, int* device) {
  if (weftResult_t r = checkComm(comm, "weftCommCuDevice")) return r;
  if (!device) return weftInvalidArgument;
  *device = comm->cudaDev;
  return weftSuccess;
}

WEFT_API weftResult_t weftCommUserRank(const weftComm_t comm, int* rank) {
  if (weftResult_t r = checkComm(comm, "weftCommUserRank")) return r;
  if (!rank) return weftInvalidArgument;
  *rank = comm->rank;
  return weftSuccess;
}

WEFT_API weftResult_t weftHostStreamCreate(weftStream_t* stream) {
  return guarded([&] {
    if (!stream) raise(weftInvalidArgument, "weftHostStreamCreate: stream is NULL");
    *stream = registerHostStream(new HostStream());
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftHostStreamSynchronize(weftStream_t stream) {
  HostStream* s = findHostStream(stream);
  if (!s) {
    WEFT_WARN("weftHostStreamSynchronize: %p is not a live host stream", stream);
    return weftInvalidArgument;
  }
  return s->synchronize();
}

WEFT_API weftResult_t weftHostStreamQuery(weftStream_t stream) {
  HostStream* s = findHostStream(stream);
  if (!s) {
    WEFT_WARN("weftHostStreamQuery: %p is not a live host stream", stream);
    return weftInvalidArgument;
  }
  return s->query();
}

WEFT_API weftResult_t weftHostStreamDestroy(weftStream_t stream) {
  if (!unregisterHostStream(stream)) {
    WEFT_WARN("weftHostStreamDestroy: %p is not a live host stream", stream);
    return weftInvalidArgument;
  }
  delete static_cast<HostStream*>(stream);
  return weftSuccess;
}

}  // extern "C"
