// The LL protocol's per-communicator part: the shared-memory regions, set up
// at init (not on the call path), and the fast path that runs a call under
// it without the selector, the plan cache or the executor.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/collectives.h"
#include "src/core/op.h"
#include "src/exec/host/ll_protocol.h"
#include "transports/shm/shm_segment.h"

struct weftComm;

namespace weft {

struct LowLatencyComm {
  ShmSegment own;                  // this rank's region
  std::vector<ShmSegment> peers;   // the other ranks' regions, mapped here
  std::unique_ptr<ll::Engine> engine;
  // Per collective, the largest size (nccl-tests bytes) up to which the
  // selector chooses (oneshot, ll) at every size below: computed from the
  // communicator's cost inputs and filters before its first call.
  bool limitsReady = false;
  std::array<uint64_t, plan::kNumColls> maxBytes{};
};

// createComm step: when every rank is on this host and WEFT_PROTO and
// WEFT_LL_BUFFSIZE leave the protocol on, creates this rank's region and maps
// every peer's (one all-gather of names). Otherwise comm->ll stays null and
// `ll` is taken out of the communicator's protocol filter (with an INFO line;
// a WEFT_PROTO that allowed nothing else falls back to simple).
void setUpLowLatency(weftComm* comm, int nHosts);

// The call path: runs op under LL when comm has it and the selector's
// choice for op's size is (oneshot, ll). Returns false to take the general path.
bool runLowLatencyIfChosen(weftComm* comm, const OpDesc& op);

// Runs op under LL (the general path chose it); comm->ll must exist.
void runLowLatency(weftComm* comm, const OpDesc& op);

// Recomputes the size limits (after a change of the communicator's filters
// or cost inputs, as weft-tune makes).
void refreshLowLatencyLimits(weftComm* comm);

}  // namespace weft
