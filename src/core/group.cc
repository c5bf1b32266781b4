#include "src/core/group.h"

#include <map>
#include <thread>
#include <vector>

#include "src/core/comm.h"
#include "src/core/host_stream.h"
#include "src/core/launch.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {
namespace {

struct PendingGroup {
  int depth = 0;
  std::vector<OpDesc> ops;
  weftStream_t stream = nullptr;
};

thread_local PendingGroup tlsGroup;

}  // namespace

bool inGroup() { return tlsGroup.depth > 0; }

namespace {

// Runs one communicator's batch, turning errors into result codes. A failure
// that leaves the communicator unusable (a dead peer, a timeout, a mismatch)
// becomes its asynchronous error.
//
// A batch that reaches a communicator after it failed does not run: the
// API checks the error when a call is made, but calls queued on a host
// stream before the failure come here later. One that ran would post its
// data into FIFOs whose readers may still be inside the failed operation,
// and they would take it for that operation's data (a size mismatch at
// best, a wrong reduction at worst).
weftResult_t runGuarded(weftComm_t comm, const std::vector<OpDesc>& ops) {
  setLogRank(comm->rank);
  if (weftResult_t e = comm->getAsyncError()) {
    WEFT_INFO(kColl, "rank %d: skipping %zu queued operation(s): communicator already failed: %s", comm->rank,
              ops.size(), weftGetErrorString(e));
    return e;
  }
  if (comm->aborting.load(std::memory_order_acquire)) return weftRemoteError;
  try {
    runBatch(comm, ops);
    return weftSuccess;
  } catch (const Error& e) {
    if (e.code() == weftRemoteError || e.code() == weftTimeout || e.code() == weftInternalError ||
        e.code() == weftSystemError)
      comm->setAsyncError(e.code(), e.what());
    return e.code();
  } catch (const std::exception& e) {
    comm->setAsyncError(weftInternalError, e.what());
    return weftInternalError;
  }
}

// One unit per thread between its decrement and its last access to comm.
constexpr int kTouching = 1 << 20;

void inflightAdd(weftComm_t comm, int delta) {
  if (delta >= 0) {
    comm->inflight.fetch_add(delta, std::memory_order_acq_rel);
    return;
  }
  // A drain (api_init.cc: weftCommDestroy) frees comm as soon as inflight
  // reads 0, so the thread that ends the last operation must not touch comm
  // after that: it holds a kTouching unit across its decrement and its ring,
  // and drops it as its last access (ASan: heap-use-after-free in the ring
  // when the count reached 0 first). A drain woken while the unit is held
  // sleeps one more slice at most.
  const int now = comm->inflight.fetch_add(delta + kTouching, std::memory_order_acq_rel) + delta + kTouching;
  if (now % kTouching == 0) {
    // A drain may sleep on the bell; ringIfSleeping after the fence cannot
    // miss a sleeper that re-checks the count (sleepUnless).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    ringIfSleeping(&comm->inflightBell);
  }
  comm->inflight.fetch_sub(kTouching, std::memory_order_release);
}

// Several communicators in one group (one thread driving several ranks)
// must progress together, so each gets a thread of its own.
weftResult_t runAll(const std::map<weftComm_t, std::vector<OpDesc>>& batches, const std::vector<weftComm_t>& order) {
  weftResult_t result = weftSuccess;
  if (order.size() == 1) {
    result = runGuarded(order[0], batches.at(order[0]));
  } else {
    std::vector<weftResult_t> results(order.size(), weftSuccess);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < order.size(); i++)
      threads.emplace_back([&, i] { results[i] = runGuarded(order[i], batches.at(order[i])); });
    for (auto& t : threads) t.join();
    for (weftResult_t r : results)
      if (r != weftSuccess && result == weftSuccess) result = r;
  }
  for (weftComm_t c : order) inflightAdd(c, -1);
  return result;
}

weftResult_t dispatch(std::vector<OpDesc> ops, weftStream_t stream) {
  if (ops.empty()) return weftSuccess;
  auto batches = std::make_shared<std::map<weftComm_t, std::vector<OpDesc>>>();
  auto order = std::make_shared<std::vector<weftComm_t>>();
  for (OpDesc& op : ops) {
    auto& b = (*batches)[op.comm];
    if (b.empty()) order->push_back(op.comm);
    b.push_back(op);
  }
  for (weftComm_t c : *order) inflightAdd(c, +1);
  HostStream* hs = stream ? findHostStream(stream) : nullptr;
  // No host stream: run now. For device buffers (a validated cudaStream_t)
  // "now" only queues the kernels on that stream.
  if (!hs) return runAll(*batches, *order);
  hs->enqueue([batches, order] { return runAll(*batches, *order); });
  return weftSuccess;
}

}  // namespace

weftResult_t checkHostStream(weftStream_t stream) {
  if (!stream || findHostStream(stream)) return weftSuccess;
  WEFT_WARN("stream %p is neither NULL nor a live weft host stream (device buffers need CUDA)", stream);
  return weftInvalidArgument;
}

weftResult_t submit(const OpDesc& op, weftStream_t stream) {
  if (tlsGroup.depth > 0) {
    // Device calls carry their own cudaStream_t (op.stream): as in NCCL,
    // each communicator of a group may use its own stream.
    if (!op.device && !tlsGroup.ops.empty() && tlsGroup.stream != stream) {
      WEFT_WARN("group mixes streams %p and %p: all operations of a group must use one stream", tlsGroup.stream,
                stream);
      return weftInvalidUsage;
    }
    if (!op.device || tlsGroup.ops.empty()) tlsGroup.stream = stream;
    tlsGroup.ops.push_back(op);
    return weftSuccess;
  }
  if (!stream) {
    // The common blocking call: no batching structures, no allocation.
    thread_local std::vector<OpDesc> one(1);
    one[0] = op;
    inflightAdd(op.comm, +1);
    weftResult_t r = runGuarded(op.comm, one);
    inflightAdd(op.comm, -1);
    return r;
  }
  if (HostStream* hs = findHostStream(stream)) {
    // One call on a host stream (the usual case): the queued task holds the
    // call itself, without dispatch's per-batch maps and vectors, whose
    // allocations cost more than a small ll collective.
    inflightAdd(op.comm, +1);
    hs->enqueue([op] {
      thread_local std::vector<OpDesc> one(1);
      one[0] = op;
      const weftResult_t r = runGuarded(op.comm, one);
      inflightAdd(op.comm, -1);
      return r;
    }, op.comm->busyPoll);
    return weftSuccess;
  }
  return dispatch({op}, stream);
}

weftResult_t submitTask(const char* fn, weftComm_t comm, weftStream_t stream, std::function<weftResult_t()> task) {
  if (tlsGroup.depth > 0) {
    WEFT_WARN("%s: not allowed between weftGroupStart and weftGroupEnd", fn);
    return weftInvalidUsage;
  }
  HostStream* hs = stream ? findHostStream(stream) : nullptr;
  inflightAdd(comm, +1);
  if (!hs) {
    weftResult_t r = task();
    inflightAdd(comm, -1);
    return r;
  }
  hs->enqueue([comm, task = std::move(task)] {
    weftResult_t r = task();
    inflightAdd(comm, -1);
    return r;
  });
  return weftSuccess;
}

weftResult_t groupStart() {
  tlsGroup.depth++;
  return weftSuccess;
}

weftResult_t groupEnd() {
  if (tlsGroup.depth == 0) {
    WEFT_WARN("weftGroupEnd without a matching weftGroupStart");
    return weftInvalidUsage;
  }
  if (--tlsGroup.depth > 0) return weftSuccess;
  std::vector<OpDesc> ops = std::move(tlsGroup.ops);
  tlsGroup.ops.clear();
  weftStream_t stream = tlsGroup.stream;
  tlsGroup.stream = nullptr;
  return dispatch(std::move(ops), stream);
}

}  // namespace weft
