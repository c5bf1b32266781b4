// weft-sim's network model: runs every rank's real plan (the algorithm
// registry's builders) over a cluster (cluster.h) and returns the time the
// call takes. Flow level, event driven:
//  - every send of a step is a flow over the links of its route, matched
//    with the receiving step in FIFO order per (sender, receiver,
//    connection), as the executors match them;
//  - the flows crossing a link share its bandwidth max-min fairly
//    (progressive filling over the flows and links that a change touches),
//    recomputed whenever a flow starts or ends;
//  - a transfer's first piece (the plan's slice) reaches the receiver the
//    route's latency (the sum of its links' per-hop latencies) after it
//    left; a step that receives and sends starts once the first piece of
//    every input arrived and cannot finish sending before its last input
//    piece arrived plus one piece: the executors' pipelining;
//  - a channel's steps run one after another on a rank, each after a fixed
//    per-step overhead (Cluster::stepOverheadUs: the executor's hand-off,
//    from calibration); channels run side by side;
//  - FIFOs hold any amount (no back-pressure); local copies and reductions
//    cost the per-step overhead only.
// Deterministic: events at one time are handled in the order they were
// made, ties in the fair share by link index.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/plan.h"
#include "src/sim/cluster.h"
#include "src/sim/symmetry.h"

namespace weft::sim {

struct RunStats {
  double us = 0;          // when the last rank finished
  uint64_t steps = 0;     // of every rank
  uint64_t netBytes = 0;  // bytes that crossed a NIC
  uint64_t rateUpdates = 0;  // fair-share recomputations (cost of the run)
  uint64_t simulatedSteps = 0;  // steps the model ran (one rank per symmetry class: symmetry.h)
  int simulatedRanks = 0;       // ranks whose plans the model ran
};

// Bytes of model state per plan step (for the caller's memory estimate).
inline constexpr size_t kBytesPerStep = 120;

// plans[r] is rank r's plan of one call. Throws weftInvalidArgument when the
// plans do not describe one call on this cluster (rank counts, unpaired
// transfers, a bad cluster).
RunStats simulate(const std::vector<plan::Plan>& plans, const Cluster& c);
// The same over plans made on demand: plans(r) is rank r's plan, called
// twice per rank (to size the model, then to fill it) and never held two at
// a time, so at thousands of ranks the model holds its own state only.
// `counted` (may be empty) is told the steps of the ranks sized so far and
// may throw to refuse the call before the model takes memory.
RunStats simulateStreamed(const std::function<plan::Plan(int rank)>& plans, const Cluster& c,
                          const std::function<void(uint64_t steps)>& counted);

// The same call run one rank per class of `sym` (symmetry.h): one plan
// per class, for its representative (Plan::rank), and the caller has
// checked that every other rank's plan is its representative's moved
// (movedPlanMatches). The result is the full model's, up to the rounding of
// the fair shares (the copies' loads are added as one product, not one by
// one).
RunStats simulateSymmetric(const std::vector<plan::Plan>& representatives, const Cluster& c, const RankSymmetry& sym);

}  // namespace weft::sim
