// WEFT_TRACE_FILE for one communicator: opens its rank's trace file at init,
// records every call, flushes the file when the communicator is destroyed
// or aborted (fatal signals flush it too, src/util/trace_buffer.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/op.h"
#include "src/util/trace_buffer.h"

struct weftComm;

namespace weft {

class CommTrace {
 public:
  CommTrace(std::shared_ptr<TraceBuffer> buffer, int rank, int slot)
      : buffer_(std::move(buffer)), rank_(rank), slot_(slot) {}
  ~CommTrace() { buffer_->flush(); }
  TraceBuffer* buffer() const { return buffer_.get(); }
  int rank() const { return rank_; }
  int slot() const { return slot_; }  // the communicator's, in the file's rank list
  uint32_t nextCall() { return calls_++; }

 private:
  std::shared_ptr<TraceBuffer> buffer_;
  int rank_;
  int slot_;
  uint32_t calls_ = 0;
};

// What launch chose for a call, for its trace event.
struct TracedCall {
  const char* algo = "";
  const char* proto = "";
  int channels = 0;
  size_t steps = 0;
};

// Called right after the init barrier, so the steady-clock time it records
// is (within a message latency) the same instant on every rank: the merge
// tool aligns the ranks' clocks on it. Tracing stays off when
// WEFT_TRACE_FILE is unset or its file cannot be written (one WARN).
void openTrace(weftComm* comm);

// `result`: weftSuccess, or the error that ended the call (a failed call is
// traced too, with what launch had chosen unknown).
void traceCall(weftComm* comm, const OpDesc& op, const TracedCall& shape, int64_t startNs, int64_t endNs,
               weftResult_t result = weftSuccess);
// A batch of grouped send/recv calls: one event.
void traceP2P(weftComm* comm, const std::vector<const OpDesc*>& ops, size_t steps, int64_t startNs, int64_t endNs,
              weftResult_t result = weftSuccess);

}  // namespace weft
