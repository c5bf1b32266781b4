// One simulated call from the plan builders to the flow model: every rank's
// plan comes from the caller's builder (the algorithm registry's), and the
// model runs one rank per symmetry class where the cluster and the plans
// allow it (symmetry.h), every rank otherwise.
#pragma once

#include <cstdint>
#include <functional>

#include "algorithms/plan.h"
#include "src/sim/cluster.h"
#include "src/sim/flow_model.h"

namespace weft::sim {

// Rank r's plan of the call.
using PlanSource = std::function<plan::Plan(int rank)>;

struct CallOptions {
  bool useSymmetry = true;  // false: every rank's every step, always
  // Refuse (weftInvalidArgument, before the plans are all built) a call
  // whose model would run more steps; 0: no limit.
  uint64_t maxSteps = 0;
  // Told the steps the model will run and the ranks whose plans they are,
  // before a call of more than largeSteps runs.
  uint64_t largeSteps = 0;
  std::function<void(uint64_t steps, int ranks)> onLarge;
};

// Builds every rank's plan once: the representatives' are kept, the others
// are checked against them (shiftedPlanMatches) and dropped; at the first
// that does not match, or when the cluster has no shift symmetry, every
// plan is kept and the full model runs. Either way the result is the full
// model's (up to rounding: simulateShifted).
RunStats simulateCall(const PlanSource& plans, const Cluster& c, const CallOptions& o = {});

}  // namespace weft::sim
