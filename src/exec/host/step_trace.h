// The host executor's per-step timing when WEFT_TRACE_FILE is on: for each
// channel, when the current step started, how long it was blocked on each
// of its peers' FIFOs and how long it spent moving and reducing data. One
// trace event per finished step (src/util/trace_buffer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "algorithms/plan.h"

namespace weft {

class TraceBuffer;

struct StepClock {
  int64_t startNs = 0;
  int64_t waitSinceNs = 0;  // 0: not blocked now
  int64_t moveNs = 0;
  int64_t waitNs[4] = {};   // recv peers 0-1, send peers 2-3
  uint8_t waitingOn = 0;    // which of those the current wait is for

  void blocked(int64_t now, uint8_t fifo) {
    if (!waitSinceNs) waitSinceNs = now;
    waitingOn = fifo;
  }
  void unblocked(int64_t now) {
    if (waitSinceNs) waitNs[waitingOn] += now - waitSinceNs;
    waitSinceNs = 0;
  }
};

// Zeroed clocks for `n` channels, from a per-thread pool that only grows.
std::span<StepClock> stepClocks(size_t n);

// Records step `index` of `channel`, which ended at endNs; commSlot is the
// communicator's slot in the file (TraceBuffer::addRank).
void traceStep(TraceBuffer& trace, int rank, int commSlot, int channel, uint32_t index, const plan::Step& st,
               uint32_t elemSize, const StepClock& clock, int64_t endNs);

}  // namespace weft
