#include "src/core/trace.h"

#include <cstdio>
#include <cstring>

#include "src/core/comm.h"
#include "src/util/clock.h"
#include "src/util/error.h"

namespace weft {
namespace {

// A ring of this many events is ~1.5 GB of address space; beyond it a
// trace is no longer a bounded side cost.
constexpr int64_t kMaxTraceEvents = 10000000;

// A bounded copy without snprintf's parsing (this runs on every traced call).
template <size_t N>
void copyName(char (&dst)[N], const char* src) {
  size_t i = 0;
  for (; i + 1 < N && src[i]; i++) dst[i] = src[i];
  dst[i] = 0;
}

const char* resultName(weftResult_t r) {
  switch (r) {
    case weftSuccess: return "ok";
    case weftUnhandledCudaError: return "unhandled cuda error";
    case weftSystemError: return "system error";
    case weftInternalError: return "internal error";
    case weftInvalidArgument: return "invalid argument";
    case weftInvalidUsage: return "invalid usage";
    case weftRemoteError: return "remote error";
    case weftInProgress: return "in progress";
    case weftTimeout: return "timeout";
    default: return "error";
  }
}

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void openTrace(weftComm* comm) {
  const int64_t syncNs = nowNs();
  const int64_t syncWallNs = wallNs();
  auto pattern = comm->config.get(settings::kTraceFile);
  if (!pattern) return;
  const int64_t capacity = comm->config.get(settings::kTraceMaxEvents);
  if (capacity < 1 || capacity > kMaxTraceEvents)
    raise(weftInvalidArgument, "WEFT_TRACE_MAX_EVENTS=%ld must be between 1 and %ld", static_cast<long>(capacity),
          static_cast<long>(kMaxTraceEvents));
  auto buffer = acquireTraceBuffer(expandTracePath(*pattern, comm->rank), uint64_t(capacity));
  if (!buffer) return;
  TraceRankInfo info;
  info.rank = comm->rank;
  info.pid = comm->peers[comm->rank].pid;
  info.clockSyncNs = syncNs;
  info.wallSyncNs = syncWallNs;
  snprintf(info.host, sizeof(info.host), "%s", comm->peers[comm->rank].hostname);
  snprintf(info.comm, sizeof(info.comm), "%s", comm->name.c_str());
  const int slot = buffer->addRank(info);
  comm->trace = std::make_unique<CommTrace>(std::move(buffer), comm->rank, slot);
}

namespace {

// What every call event holds besides the call's own shape.
struct CallSpan {
  uint32_t call;
  int rank, slot;
  int64_t startNs, endNs;
  weftResult_t result;
  void fill(TraceEvent& e) const {
    e.kind = TraceEvent::Call;
    e.commSlot = int8_t(slot);
    e.result = resultName(result);
    e.pid = rank;
    e.tid = 0;
    e.index = call;
    e.startNs = startNs;
    e.durNs = endNs - startNs;
  }
};

}  // namespace

void traceCall(weftComm* comm, const OpDesc& op, const TracedCall& shape, int64_t startNs, int64_t endNs,
               weftResult_t result) {
  CommTrace& t = *comm->trace;
  const CallSpan span{t.nextCall(), t.rank(), t.slot(), startNs, endNs, result};
  t.buffer()->record([&](TraceEvent& e) {
    span.fill(e);
    e.name = plan::collName(op.coll);
    e.count = op.count;
    e.bytes = plan::largestBufferElems(op.coll, op.count, comm->nranks) * kernels::typeSize(op.type);
    e.type = kernels::typeName(op.type);
    e.op = plan::collInfo(op.coll).reduces ? kernels::opName(op.op.kind) : "";
    copyName(e.algo, shape.algo);
    copyName(e.proto, shape.proto);
    e.channels = int16_t(shape.channels);
    e.root = plan::collInfo(op.coll).rooted ? op.root : -1;
    e.steps = uint32_t(shape.steps);
  });
}

void traceP2P(weftComm* comm, const std::vector<const OpDesc*>& ops, size_t steps, int64_t startNs, int64_t endNs,
              weftResult_t result) {
  CommTrace& t = *comm->trace;
  const CallSpan span{t.nextCall(), t.rank(), t.slot(), startNs, endNs, result};
  uint64_t bytes = 0;
  for (const OpDesc* op : ops) bytes += op->count * kernels::typeSize(op->type);
  t.buffer()->record([&](TraceEvent& e) {
    span.fill(e);
    e.name = ops.size() == 1 ? (ops[0]->isSend ? "Send" : "Recv") : "SendRecv group";
    e.count = ops.size();  // calls in the group
    e.bytes = bytes;
    e.type = kernels::typeName(ops[0]->type);
    e.op = "";
    copyName(e.algo, "p2p");
    copyName(e.proto, "simple");
    e.channels = 1;
    e.root = ops.size() == 1 ? ops[0]->peer : -1;
    e.steps = uint32_t(steps);
  });
}

}  // namespace weft
