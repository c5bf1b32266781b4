// From measured AllReduce medians to the cost model's inputs: the analytic
// constants fitted at the smallest and largest sizes (what communicators of
// other shapes use) and the measured curves themselves (what communicators
// of the measured shape use).
#pragma once

#include <vector>

#include "algorithms/cost_model.h"
#include "tools/weft-tune/interleaved_timing.h"

namespace weft::tune {

// points[i].medianUs is indexed by algorithm (Algo's value). `start` holds
// the communicator's topology-derived inputs; `network`: fit the network
// link's constants (ranks over sockets) instead of shared memory's.
algo::CostInputs fitCostInputs(const algo::CostInputs& start, const std::vector<SweepPoint>& points, bool network);

}  // namespace weft::tune
