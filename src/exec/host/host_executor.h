// Runs a plan on host buffers.
//
// One interpreter for every algorithm: each channel of the plan is a cursor
// over its steps; the executor advances whichever channel can move (its
// input slots are posted and its output slots are free), one FIFO piece at a
// time, and sleeps on the rank's doorbell when none can. Waiting is bounded:
// no progress for `timeoutMs` is weftTimeout, a failed connection is
// weftRemoteError, the abort flag ends the run with weftRemoteError.
#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/plan.h"
#include "src/kernels/reduce.h"
#include "transports/fifo.h"

namespace weft {

class TraceBuffer;
class CallState;

struct BufferBinding {
  const void* send = nullptr;
  void* recv = nullptr;
};

// Where the executor finds the FIFO end for (peer, conn) in each direction.
struct FifoLookup {
  std::function<FifoEnd(int peer, int conn)> send;
  std::function<FifoEnd(int peer, int conn)> recv;
};

// What Direct and Barrier steps (plan::StepKind) need: every rank's buffers
// as mapped in this process, and the call's barrier among the ranks.
class DirectAccess {
 public:
  std::vector<BufferBinding> buffers;  // index = rank (this rank's too)
  // Returns once every rank has reached this barrier of the call; throws
  // weft::Error on abort, a failed communicator or a timeout.
  virtual void barrier() = 0;
  // Tests only: runs after each Direct step, so a test can hold a rank
  // inside its steps while its peers time out (empty otherwise).
  std::function<void()> afterStep;

 protected:
  ~DirectAccess() = default;
};

struct HostExecContext {
  Doorbell* bell = nullptr;                     // rung by peers/proxies on progress
  const std::atomic<bool>* abortFlag = nullptr;
  // Returns non-success when the communicator already failed (a dead peer).
  std::function<weftResult_t()> asyncError;
  int64_t timeoutMs = 0;
  int rank = 0;
  // The rank has a core of its own (WEFT_SPIN, busyPolls): a wait polls
  // back to back at first; otherwise it soon yields its core (to the rank
  // it waits for) instead of spinning on it.
  bool busyPoll = false;
  // WEFT_TRACE_FILE: record one event per step (src/exec/host/step_trace.h).
  TraceBuffer* trace = nullptr;
  int traceComm = -1;  // the communicator's slot in that file (TraceBuffer::addRank)
  // Where this rank's diagnosis state lives (src/core/call_state.h): bytes
  // moved, and the channel, step and peer of a wait past its spin phase.
  CallState* state = nullptr;
  // Called once when the run times out; its text is appended to the
  // timeout error (the communicator's diagnosis: which ranks are missing).
  std::function<std::string()> explainTimeout;
  // Plans with Direct or Barrier steps only (algorithms/direct.h).
  DirectAccess* direct = nullptr;
  // The call's outputs are larger than the caches (WEFT_STREAM_MIN_BYTES):
  // what lands in the caller's buffers is written with non-temporal stores
  // (src/kernels/streaming.h), which skip reading each line before writing it.
  bool streamStores = false;
};

// Runs `plan` to completion or throws weft::Error.
void runHostPlan(const plan::Plan& plan, std::span<const BufferBinding> bindings, void* scratch,
                 const kernels::RedOp& op, const FifoLookup& fifos, const HostExecContext& ctx);

}  // namespace weft
