// libnccl.so.2: the NCCL C API on top of weft. Types and enum values are
// identical (weft mirrors NCCL), so most functions are a cast and a call;
// what is not a plain forward is said where it happens:
//   - loading the library turns on the settings' NCCL names (NCCL_DEBUG for
//     WEFT_DEBUG, /etc/nccl.conf), before anything reads a setting;
//   - ncclCommInitRank inside a group is deferred to the outermost
//     ncclGroupEnd and run for all deferred ranks at once (NCCL semantics; one
//     thread may initialise several ranks that way, as nccl-tests -g does);
//   - a config of any NCCL version is read only up to its size;
//   - weftTimeout has no NCCL code and is reported as ncclRemoteError;
//   - ncclMemAlloc is cudaMalloc when built with CUDA, weftMemAlloc (host
//     memory peers on the host can map) otherwise; ncclCommRegister is
//     weftCommRegister; ncclCommWindowRegister returns a token and registers
//     nothing.
// Gather/Scatter and what weft cannot do live in the other nccl_*.cc files.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bindings/nccl/nccl_compat.h"
#include "src/util/log.h"
#include "src/util/settings.h"

#if defined(WEFT_NCCL_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

static_assert(sizeof(ncclUniqueId) == sizeof(weftUniqueId), "unique ids must have one size");
static_assert(static_cast<int>(ncclInProgress) == static_cast<int>(weftInProgress), "result codes must match");
static_assert(static_cast<int>(ncclBfloat16) == static_cast<int>(weftBfloat16), "data types must match");
static_assert(static_cast<int>(ncclFloat8e5m2) == static_cast<int>(weftFloat8e5m2), "data types must match");
static_assert(static_cast<int>(ncclNumTypes) == static_cast<int>(weftNumTypes), "data types must match");
static_assert(static_cast<int>(ncclAvg) == static_cast<int>(weftAvg), "ops must match");
static_assert(NCCL_CONFIG_UNDEF_INT == WEFT_CONFIG_UNDEF_INT, "undefined config values must match");

using weft::abiInt;
using weft::nccl::toNccl;
using weft::nccl::toWeft;

bool weft::nccl::toWeft(const char* fn, ncclDataType_t type, weftDataType_t* out) {
  const int raw = abiInt(type);
  if (raw < 0 || raw >= ncclNumTypes) {
    WEFT_WARN("%s: datatype %d is not an ncclDataType_t (0 to %d)", fn, raw, ncclNumTypes - 1);
    return false;
  }
  *out = static_cast<weftDataType_t>(raw);
  return true;
}

bool weft::nccl::toWeft(const char* fn, ncclRedOp_t op, weftRedOp_t* out) {
  const int raw = abiInt(op);
  if (raw < 0) {
    WEFT_WARN("%s: op %d is not an ncclRedOp_t", fn, raw);
    return false;
  }
  *out = static_cast<weftRedOp_t>(raw);
  return true;
}

// Before main and before anything in this library reads a setting: a
// program that loads libnccl.so.2 is configured the way NCCL would be. It
// reads the NCCL_* names, and it waits for a live peer as long as NCCL does,
// until the framework gives up and aborts (PyTorch's watchdog; weft's own
// 5-minute default would fail a rank that is only slow, say writing a
// checkpoint). INT32_MAX ms (24.8 days) is the longest a config can carry
// (weftConfig_t.timeoutMs is an int) and so still bounds every wait. A dead
// peer is still noticed at once (its sockets close; WEFT_SOCKET_DEAD_PEER_S
// for a silent host), and WEFT_TIMEOUT_MS, from a file or the environment,
// still wins.
__attribute__((constructor)) static void configureLikeNccl() {
  weft::settings::enableNcclNames();
  weft::settings::overrideDefault(weft::settings::kTimeoutMs.id, "2147483647", "libnccl.so.2");
}

namespace {

constexpr unsigned kConfigMagic = 0xcafebeefu;

// Whether the caller's config, of the size it says, holds `field`.
#define WEFT_NCCL_CONFIG_HOLDS(in, field) ((in)->size >= offsetof(ncclConfig_t, field) + sizeof((in)->field))

// Copies the fields weft honours from an NCCL config of any version: the
// size says which version, and nothing past it is read (a 2.14 program's
// struct ends at netName). A size beyond ours is a later NCCL's; its extra
// fields are ignored.
ncclResult_t translateConfig(const ncclConfig_t* in, weftConfig_t* out) {
  *out = WEFT_CONFIG_INITIALIZER;
  if (!in) return ncclSuccess;
  if (in->size < offsetof(ncclConfig_t, blocking) || in->magic != kConfigMagic) {
    WEFT_WARN("ncclConfig_t (size %zu, magic 0x%x) was not set up with NCCL_CONFIG_INITIALIZER", in->size,
              in->size >= offsetof(ncclConfig_t, version) ? in->magic : 0u);
    return ncclInvalidArgument;
  }
  if (WEFT_NCCL_CONFIG_HOLDS(in, blocking)) out->blocking = in->blocking;
  if (WEFT_NCCL_CONFIG_HOLDS(in, minCTAs)) out->minCTAs = in->minCTAs;
  if (WEFT_NCCL_CONFIG_HOLDS(in, maxCTAs)) out->maxCTAs = in->maxCTAs;
  if (WEFT_NCCL_CONFIG_HOLDS(in, netName)) out->netName = in->netName;
  if (WEFT_NCCL_CONFIG_HOLDS(in, splitShare)) out->splitShare = in->splitShare;
  if (WEFT_NCCL_CONFIG_HOLDS(in, trafficClass)) out->trafficClass = in->trafficClass;  // weft: ignored
  if (WEFT_NCCL_CONFIG_HOLDS(in, commName)) out->commName = in->commName;
  return ncclSuccess;
}

// An init called between ncclGroupStart and ncclGroupEnd.
struct DeferredInit {
  ncclComm_t* comm;
  int nranks;
  ncclUniqueId id;
  int rank;
  weftConfig_t config;
  bool hasConfig;
};

thread_local int groupDepth = 0;
thread_local std::vector<DeferredInit> deferredInits;

// Runs every deferred init concurrently (they rendezvous with each other)
// and returns the first failure; the ranks that succeeded are aborted then,
// so no half-built clique is left behind.
ncclResult_t runDeferredInits() {
  std::vector<DeferredInit> inits;
  inits.swap(deferredInits);
  std::vector<weftResult_t> results(inits.size(), weftSuccess);
  std::vector<weftComm_t> comms(inits.size(), nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inits.size(); i++)
    threads.emplace_back([&, i] {
      weftUniqueId id;
      memcpy(&id, &inits[i].id, sizeof(id));
      DeferredInit& d = inits[i];
      results[i] = d.hasConfig ? weftCommInitRankConfig(&comms[i], d.nranks, id, d.rank, &d.config)
                               : weftCommInitRank(&comms[i], d.nranks, id, d.rank);
    });
  for (auto& t : threads) t.join();
  weftResult_t first = weftSuccess;
  for (weftResult_t r : results)
    if (r != weftSuccess && first == weftSuccess) first = r;
  for (size_t i = 0; i < inits.size(); i++) {
    if (first != weftSuccess && results[i] == weftSuccess) weftCommAbort(comms[i]);
    *inits[i].comm = first == weftSuccess ? toNccl(comms[i]) : nullptr;
  }
  return toNccl(first);
}

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, ncclConfig_t* config) {
  if (!comm) return ncclInvalidArgument;
  weftConfig_t cfg;
  if (ncclResult_t r = translateConfig(config, &cfg)) return r;
  if (groupDepth > 0) {
    *comm = nullptr;
    deferredInits.push_back(DeferredInit{comm, nranks, id, rank, cfg, config != nullptr});
    return ncclSuccess;
  }
  weftUniqueId wid;
  memcpy(&wid, &id, sizeof(wid));
  weftComm_t out = nullptr;
  weftResult_t r = config ? weftCommInitRankConfig(&out, nranks, wid, rank, &cfg) : weftCommInitRank(&out, nranks, wid, rank);
  *comm = toNccl(out);
  return toNccl(r);
}

// A window "registration": weft keeps none, so this is only a token that
// deregistration checks.
constexpr uint64_t kWindowMagic = 0x7765667457696e21ull;
struct Registration {
  uint64_t magic;
  const void* buff;
  size_t size;
};

}  // namespace

extern "C" {

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return ncclInvalidArgument;
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
#if defined(WEFT_NCCL_WITH_CUDA)
  if (cudaMalloc(ptr, size) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls are not blamed
    *ptr = nullptr;
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
#else
  return toNccl(weftMemAlloc(ptr, size));
#endif
}

ncclResult_t ncclMemFree(void* ptr) {
  if (!ptr) return ncclSuccess;
#if defined(WEFT_NCCL_WITH_CUDA)
  return cudaFree(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
#else
  return toNccl(weftMemFree(ptr));
#endif
}

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (!uniqueId) return ncclInvalidArgument;
  weftUniqueId id;
  weftResult_t r = weftGetUniqueId(&id);
  if (r == weftSuccess) memcpy(uniqueId, &id, sizeof(id));
  return toNccl(r);
}

// weft's strings say "run with WEFT_DEBUG=WARN"; a program written for NCCL
// is told the name it knows, which this library reads as well.
const char* ncclGetErrorString(ncclResult_t result) {
  static const std::array<std::string, ncclNumResults> strings = [] {
    std::array<std::string, ncclNumResults> s;
    for (int r = 0; r < ncclNumResults; r++) {
      s[r] = weftGetErrorString(static_cast<weftResult_t>(r));
      if (size_t at = s[r].find("WEFT_DEBUG"); at != std::string::npos) s[r].replace(at, 4, "NCCL");
    }
    return s;
  }();
  // Any int from C: looked at as one (abiInt), never as the enum.
  const int code = abiInt(result);
  if (code < 0 || code >= ncclNumResults) return "unknown result code";
  return strings[size_t(code)].c_str();
}

const char* ncclGetLastError(ncclComm_t comm) { return weftGetLastError(toWeft(comm)); }

// Logging is configured once per process from WEFT_DEBUG/NCCL_DEBUG; there
// is nothing to reset.
void ncclResetDebugInit(void) {}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr);
}

// NCCL spreads its bootstrap over several roots for speed; weft's needs one,
// and every rank passes the same list, so all join the first id's root.
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config) {
  if (nId < 1 || !commIds) {
    WEFT_WARN("ncclCommInitRankScalable: nId=%d and commIds=%p: at least one unique id is needed", nId,
              static_cast<void*>(commIds));
    if (newcomm) *newcomm = nullptr;
    return ncclInvalidArgument;
  }
  return initRank(newcomm, nranks, commIds[0], myrank, config);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return toNccl(weftCommInitAll(reinterpret_cast<weftComm_t*>(comm), ndev, devlist));
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  weftConfig_t cfg;
  if (ncclResult_t r = translateConfig(config, &cfg)) return r;
  return toNccl(weftCommSplit(toWeft(comm), color, key, reinterpret_cast<weftComm_t*>(newcomm), config ? &cfg : nullptr));
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return toNccl(weftCommFinalize(toWeft(comm))); }
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return toNccl(weftCommDestroy(toWeft(comm))); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return toNccl(weftCommAbort(toWeft(comm))); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!asyncError) return ncclInvalidArgument;
  weftResult_t e = weftSuccess;
  weftResult_t r = weftCommGetAsyncError(toWeft(comm), &e);
  *asyncError = toNccl(e);
  return toNccl(r);
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) { return toNccl(weftCommCount(toWeft(comm), count)); }
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return toNccl(weftCommCuDevice(toWeft(comm), device));
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) { return toNccl(weftCommUserRank(toWeft(comm), rank)); }

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return toNccl(weftCommRegister(toWeft(comm), buff, size, handle));
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return toNccl(weftCommDeregister(toWeft(comm), handle));
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  if (!comm || !win) return ncclInvalidArgument;
  if (winFlags & ~(NCCL_WIN_DEFAULT | NCCL_WIN_COLL_SYMMETRIC)) {
    WEFT_WARN("ncclCommWindowRegister: unknown flags 0x%x", winFlags);
    return ncclInvalidArgument;
  }
  int count = 0;
  if (ncclResult_t r = toNccl(weftCommCount(toWeft(comm), &count))) return r;
  *win = reinterpret_cast<ncclWindow_t>(new Registration{kWindowMagic, buff, size});
  return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  auto* reg = reinterpret_cast<Registration*>(win);
  if (!comm || !reg || reg->magic != kWindowMagic) return ncclInvalidArgument;
  reg->magic = 0;
  delete reg;
  return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  weftDataType_t type;
  if (!toWeft("ncclRedOpCreatePreMulSum", datatype, &type)) return ncclInvalidArgument;
  const int where = abiInt(residence);
  if (where != ncclScalarDevice && where != ncclScalarHostImmediate) {
    WEFT_WARN("ncclRedOpCreatePreMulSum: residence %d is not an ncclScalarResidence_t", where);
    return ncclInvalidArgument;
  }
  return toNccl(weftRedOpCreatePreMulSum(reinterpret_cast<weftRedOp_t*>(op), scalar, type,
                                         static_cast<weftScalarResidence_t>(where), toWeft(comm)));
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  weftRedOp_t o;
  if (!toWeft("ncclRedOpDestroy", op, &o)) return ncclInvalidArgument;
  return toNccl(weftRedOpDestroy(o, toWeft(comm)));
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  weftDataType_t type;
  weftRedOp_t o;
  if (!toWeft("ncclReduce", datatype, &type) || !toWeft("ncclReduce", op, &o)) return ncclInvalidArgument;
  return toNccl(weftReduce(sendbuff, recvbuff, count, type, o, root, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  weftDataType_t type;
  if (!toWeft("ncclBcast", datatype, &type)) return ncclInvalidArgument;
  return toNccl(weftBcast(buff, count, type, root, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  weftDataType_t type;
  if (!toWeft("ncclBroadcast", datatype, &type)) return ncclInvalidArgument;
  return toNccl(weftBroadcast(sendbuff, recvbuff, count, type, root, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  weftDataType_t type;
  weftRedOp_t o;
  if (!toWeft("ncclAllReduce", datatype, &type) || !toWeft("ncclAllReduce", op, &o)) return ncclInvalidArgument;
  return toNccl(weftAllReduce(sendbuff, recvbuff, count, type, o, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  weftDataType_t type;
  weftRedOp_t o;
  if (!toWeft("ncclReduceScatter", datatype, &type) || !toWeft("ncclReduceScatter", op, &o))
    return ncclInvalidArgument;
  return toNccl(weftReduceScatter(sendbuff, recvbuff, recvcount, type, o, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  weftDataType_t type;
  if (!toWeft("ncclAllGather", datatype, &type)) return ncclInvalidArgument;
  return toNccl(weftAllGather(sendbuff, recvbuff, sendcount, type, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream) {
  weftDataType_t type;
  if (!toWeft("ncclAlltoAll", datatype, &type)) return ncclInvalidArgument;
  return toNccl(weftAlltoAll(sendbuff, recvbuff, count, type, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  weftDataType_t type;
  if (!toWeft("ncclSend", datatype, &type)) return ncclInvalidArgument;
  return toNccl(weftSend(sendbuff, count, type, peer, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  weftDataType_t type;
  if (!toWeft("ncclRecv", datatype, &type)) return ncclInvalidArgument;
  return toNccl(weftRecv(recvbuff, count, type, peer, toWeft(comm), toWeft(stream)));
}

ncclResult_t ncclGroupStart(void) {
  ncclResult_t r = toNccl(weftGroupStart());
  if (r == ncclSuccess) groupDepth++;
  return r;
}

ncclResult_t ncclGroupEnd(void) {
  if (groupDepth == 0) return ncclInvalidUsage;
  groupDepth--;
  ncclResult_t r = toNccl(weftGroupEnd());
  if (groupDepth == 0 && !deferredInits.empty()) {
    ncclResult_t i = runDeferredInits();
    if (r == ncclSuccess) r = i;
  }
  return r;
}

}  // extern "C"

WEFT_NCCL_PROFILING_ALIAS(ncclMemAlloc)
WEFT_NCCL_PROFILING_ALIAS(ncclMemFree)
WEFT_NCCL_PROFILING_ALIAS(ncclGetVersion)
WEFT_NCCL_PROFILING_ALIAS(ncclGetUniqueId)
WEFT_NCCL_PROFILING_ALIAS(ncclGetErrorString)
WEFT_NCCL_PROFILING_ALIAS(ncclGetLastError)
WEFT_NCCL_PROFILING_ALIAS(ncclResetDebugInit)
WEFT_NCCL_PROFILING_ALIAS(ncclCommInitRankConfig)
WEFT_NCCL_PROFILING_ALIAS(ncclCommInitRank)
WEFT_NCCL_PROFILING_ALIAS(ncclCommInitRankScalable)
WEFT_NCCL_PROFILING_ALIAS(ncclCommInitAll)
WEFT_NCCL_PROFILING_ALIAS(ncclCommSplit)
WEFT_NCCL_PROFILING_ALIAS(ncclCommFinalize)
WEFT_NCCL_PROFILING_ALIAS(ncclCommDestroy)
WEFT_NCCL_PROFILING_ALIAS(ncclCommAbort)
WEFT_NCCL_PROFILING_ALIAS(ncclCommGetAsyncError)
WEFT_NCCL_PROFILING_ALIAS(ncclCommCount)
WEFT_NCCL_PROFILING_ALIAS(ncclCommCuDevice)
WEFT_NCCL_PROFILING_ALIAS(ncclCommUserRank)
WEFT_NCCL_PROFILING_ALIAS(ncclCommRegister)
WEFT_NCCL_PROFILING_ALIAS(ncclCommDeregister)
WEFT_NCCL_PROFILING_ALIAS(ncclCommWindowRegister)
WEFT_NCCL_PROFILING_ALIAS(ncclCommWindowDeregister)
WEFT_NCCL_PROFILING_ALIAS(ncclRedOpCreatePreMulSum)
WEFT_NCCL_PROFILING_ALIAS(ncclRedOpDestroy)
WEFT_NCCL_PROFILING_ALIAS(ncclReduce)
WEFT_NCCL_PROFILING_ALIAS(ncclBcast)
WEFT_NCCL_PROFILING_ALIAS(ncclBroadcast)
WEFT_NCCL_PROFILING_ALIAS(ncclAllReduce)
WEFT_NCCL_PROFILING_ALIAS(ncclReduceScatter)
WEFT_NCCL_PROFILING_ALIAS(ncclAllGather)
WEFT_NCCL_PROFILING_ALIAS(ncclAlltoAll)
WEFT_NCCL_PROFILING_ALIAS(ncclSend)
WEFT_NCCL_PROFILING_ALIAS(ncclRecv)
WEFT_NCCL_PROFILING_ALIAS(ncclGroupStart)
WEFT_NCCL_PROFILING_ALIAS(ncclGroupEnd)
