// C API: collectives, point-to-point, groups and reduction operations.
// Each call is validated here, before anything is queued: a bad argument
// returns its code with a log line and never touches user buffers.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>

#include "algorithms/collectives.h"
#include "src/core/api_guard.h"
#include "src/core/group.h"
#include "src/exec/cuda/device_route.h"
#include "src/util/abi_enum.h"

using namespace weft;
using plan::Coll;

namespace {

// Resolves a user-visible op, as the integer the caller passed, to the
// kernels' RedOp.
weftResult_t resolveOp(weftComm_t comm, int op, weftDataType_t type, kernels::RedOp* out, const char* fn) {
  out->type = type;
  out->nranks = comm->nranks;
  switch (op) {
    case weftSum: out->kind = kernels::OpKind::Sum; return weftSuccess;
    case weftProd: out->kind = kernels::OpKind::Prod; return weftSuccess;
    case weftMax: out->kind = kernels::OpKind::Max; return weftSuccess;
    case weftMin: out->kind = kernels::OpKind::Min; return weftSuccess;
    case weftAvg: out->kind = kernels::OpKind::Avg; return weftSuccess;
    default: break;
  }
  std::lock_guard<std::mutex> lock(comm->redOpMutex);
  long idx = static_cast<long>(op) - weftNumOps;
  if (idx < 0 || idx >= static_cast<long>(comm->userOps.size()) || !comm->userOps[idx].live) {
    WEFT_WARN("%s: op %d is not a valid reduction operation on this communicator", fn, op);
    return weftInvalidArgument;
  }
  const UserRedOp& u = comm->userOps[idx];
  if (u.type != type) {
    WEFT_WARN("%s: op %d was created for type %s, used with %s", fn, op, kernels::typeName(u.type),
              kernels::typeName(type));
    return weftInvalidArgument;
  }
  out->kind = kernels::OpKind::PreMulSum;
  memcpy(out->scalar, u.scalar, sizeof(out->scalar));
  return weftSuccess;
}

struct CallCheck {
  const char* fn;
  weftComm_t comm;
  weftResult_t result = weftSuccess;

  bool fail(weftResult_t code, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    WEFT_WARN("%s: %s", fn, msg);
    setLastError(std::string(fn) + ": " + msg);
    result = code;
    return false;
  }
};

// The checks every call shares. `elements` is the largest buffer in
// elements (count x nranks for gathered buffers). `rawType` is the datatype
// argument as the caller's integer; *type is set once it is known valid.
weftResult_t checkCommon(CallCheck& c, const void* send, const void* recv, size_t count, size_t multiplier,
                         int rawType, weftStream_t stream, bool needSend, bool needRecv, bool* device,
                         weftDataType_t* type) {
  if (weftResult_t r = checkComm(c.comm, c.fn)) return r;
  setLogRank(c.comm->rank);
  if (weftResult_t e = c.comm->getAsyncError()) {
    WEFT_WARN("%s: communicator already failed: %s", c.fn, weftGetErrorString(e));
    return e;
  }
  if (const std::string why = notADataType(rawType); !why.empty()) {
    c.fail(weftInvalidArgument, "%s", why.c_str());
    return c.result;
  }
  *type = static_cast<weftDataType_t>(rawType);
  size_t es = kernels::typeSize(*type);
  if (count > std::numeric_limits<size_t>::max() / es / multiplier) {
    c.fail(weftInvalidArgument, "count %zu x %zu x %zu bytes overflows", count, multiplier, es);
    return c.result;
  }
  if (count > 0 && needSend && !send) {
    c.fail(weftInvalidArgument, "sendbuff is NULL with count %zu", count);
    return c.result;
  }
  if (count > 0 && needRecv && !recv) {
    c.fail(weftInvalidArgument, "recvbuff is NULL with count %zu", count);
    return c.result;
  }
  // Device or host buffers, and the stream kind that goes with them.
  if (weftResult_t r = cuda::checkCallBuffers(c.fn, needSend ? send : nullptr, needRecv ? recv : nullptr, stream,
                                              device))
    return r;
  return weftSuccess;
}

// One rank, in place, outside a group: the result is the input, so a
// validated call has nothing to do (NCCL returns at once too). PreMulSum
// still scales; Avg over one rank is the value itself. A group keeps its
// calls for weftGroupEnd's checks.
bool oneRankNothingToDo(const weftComm* comm, const void* send, const void* recv, const kernels::RedOp& op) {
  return comm->nranks == 1 && send == recv && op.kind != kernels::OpKind::PreMulSum && !inGroup();
}

// `rawType` and `op` are the caller's integers (abiInt), checked here.
weftResult_t collective(const char* fn, Coll coll, const void* send, void* recv, size_t count, int rawType, int op,
                        int root, weftComm_t comm, weftStream_t stream) {
  return guarded([&] {
    CallCheck c{fn, comm};
    const plan::CollInfo& info = plan::collInfo(coll);
    if (weftResult_t r = checkComm(comm, fn)) return r;
    // The larger buffer, as a multiple of count (gathered buffers hold nranks blocks).
    const size_t mult = plan::largestBufferElems(coll, 1, comm->nranks);
    const bool rooted = info.rooted;
    // Rooted calls: only the root needs a send buffer for Broadcast, only
    // the root needs a receive buffer for Reduce (the root alone has data to
    // give, or the result).
    bool needSend = true, needRecv = true;
    if (rooted && !info.reduces) needSend = comm->rank == root;
    if (rooted && info.reduces) needRecv = comm->rank == root;
    bool device = false;
    weftDataType_t type = weftFloat32;
    if (weftResult_t r = checkCommon(c, send, recv, count, mult, rawType, stream, needSend, needRecv, &device, &type))
      return r;
    if (rooted && (root < 0 || root >= comm->nranks)) {
      c.fail(weftInvalidArgument, "root %d is out of range for %d ranks", root, comm->nranks);
      return c.result;
    }
    OpDesc d;
    d.coll = coll;
    d.send = send;
    d.recv = recv;
    d.count = count;
    d.type = type;
    d.root = rooted ? root : 0;
    d.comm = comm;
    d.device = device;
    d.stream = stream;
    if (info.reduces) {
      if (weftResult_t r = resolveOp(comm, op, type, &d.op, fn)) return r;
    } else {
      d.op.type = type;
      d.op.nranks = comm->nranks;
    }
    WEFT_TRACE(kColl, "%s send %p recv %p count %zu type %s op %d root %d comm %p stream %p", fn, send,
               static_cast<void*>(recv), count, kernels::typeName(type), op, root,
               static_cast<void*>(comm), stream);
    if (oneRankNothingToDo(comm, send, recv, d.op)) return weftSuccess;
    return submit(d, stream);
  });
}

weftResult_t pointToPoint(const char* fn, bool isSend, const void* send, void* recv, size_t count, int rawType,
                          int peer, weftComm_t comm, weftStream_t stream) {
  return guarded([&] {
    CallCheck c{fn, comm};
    bool device = false;
    weftDataType_t type = weftFloat32;
    if (weftResult_t r = checkCommon(c, send, recv, count, 1, rawType, stream, isSend, !isSend, &device, &type))
      return r;
    if (peer < 0 || peer >= comm->nranks) {
      c.fail(weftInvalidArgument, "peer %d is out of range for %d ranks", peer, comm->nranks);
      return c.result;
    }
    OpDesc d;
    d.coll = Coll::SendRecv;
    d.isSend = isSend;
    d.send = send;
    d.recv = recv;
    d.count = count;
    d.type = type;
    d.peer = peer;
    d.comm = comm;
    d.device = device;
    d.stream = stream;
    return submit(d, stream);
  });
}

}  // namespace

extern "C" {

WEFT_API weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                    weftRedOp_t op, weftComm_t comm, weftStream_t stream) {
  return collective("weftAllReduce", Coll::AllReduce, sendbuff, recvbuff, count, abiInt(datatype), abiInt(op), 0, comm,
                    stream);
}

WEFT_API weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                                        weftStream_t stream) {
  return collective("weftReduceScatter", Coll::ReduceScatter, sendbuff, recvbuff, recvcount, abiInt(datatype),
                    abiInt(op), 0, comm, stream);
}

WEFT_API weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, weftDataType_t datatype,
                                    weftComm_t comm, weftStream_t stream) {
  return collective("weftAllGather", Coll::AllGather, sendbuff, recvbuff, sendcount, abiInt(datatype), weftSum, 0, comm,
                    stream);
}

WEFT_API weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                    int root, weftComm_t comm, weftStream_t stream) {
  return collective("weftBroadcast", Coll::Broadcast, sendbuff, recvbuff, count, abiInt(datatype), weftSum, root, comm,
                    stream);
}

WEFT_API weftResult_t weftBcast(void* buff, size_t count, weftDataType_t datatype, int root, weftComm_t comm,
                                weftStream_t stream) {
  return collective("weftBcast", Coll::Broadcast, buff, buff, count, abiInt(datatype), weftSum, root, comm, stream);
}

WEFT_API weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                 weftRedOp_t op, int root, weftComm_t comm, weftStream_t stream) {
  return collective("weftReduce", Coll::Reduce, sendbuff, recvbuff, count, abiInt(datatype), abiInt(op), root, comm,
                    stream);
}

WEFT_API weftResult_t weftAlltoAll(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                   weftComm_t comm, weftStream_t stream) {
  return collective("weftAlltoAll", Coll::AllToAll, sendbuff, recvbuff, count, abiInt(datatype), weftSum, 0, comm,
                    stream);
}

WEFT_API weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer,
                               weftComm_t comm, weftStream_t stream) {
  return pointToPoint("weftSend", true, sendbuff, nullptr, count, abiInt(datatype), peer, comm, stream);
}

WEFT_API weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                               weftStream_t stream) {
  return pointToPoint("weftRecv", false, nullptr, recvbuff, count, abiInt(datatype), peer, comm, stream);
}

WEFT_API weftResult_t weftGroupStart(void) { return groupStart(); }
WEFT_API weftResult_t weftGroupEnd(void) { return guarded([] { return groupEnd(); }); }

WEFT_API weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                               weftScalarResidence_t residence, weftComm_t comm) {
  if (weftResult_t r = checkComm(comm, "weftRedOpCreatePreMulSum")) return r;
  const int rawType = abiInt(datatype), rawResidence = abiInt(residence);
  return guarded([&] {
    if (!op || !scalar) raise(weftInvalidArgument, "weftRedOpCreatePreMulSum: op or scalar is NULL");
    if (const std::string why = notADataType(rawType); !why.empty())
      raise(weftInvalidArgument, "weftRedOpCreatePreMulSum: %s", why.c_str());
    if (rawResidence != weftScalarHostImmediate)
      raise(weftInvalidArgument,
            "weftRedOpCreatePreMulSum: residence %d: only weftScalarHostImmediate (%d) is supported for host "
            "communicators",
            rawResidence, weftScalarHostImmediate);
    const auto type = static_cast<weftDataType_t>(rawType);
    UserRedOp u;
    u.live = true;
    u.type = type;
    memcpy(u.scalar, scalar, kernels::typeSize(type));
    std::lock_guard<std::mutex> lock(comm->redOpMutex);
    size_t idx = 0;
    while (idx < comm->userOps.size() && comm->userOps[idx].live) idx++;
    if (idx == comm->userOps.size()) comm->userOps.push_back(u);
    else comm->userOps[idx] = u;
    *op = static_cast<weftRedOp_t>(weftNumOps + idx);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm) {
  if (weftResult_t r = checkComm(comm, "weftRedOpDestroy")) return r;
  const int rawOp = abiInt(op);
  std::lock_guard<std::mutex> lock(comm->redOpMutex);
  long idx = static_cast<long>(rawOp) - weftNumOps;
  if (idx < 0 || idx >= static_cast<long>(comm->userOps.size()) || !comm->userOps[idx].live) {
    WEFT_WARN("weftRedOpDestroy: op %d is not a user-created operation of this communicator", rawOp);
    return weftInvalidArgument;
  }
  comm->userOps[idx].live = false;
  return weftSuccess;
}

}  // extern "C"
