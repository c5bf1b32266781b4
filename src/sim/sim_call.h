// One simulated call from the plan builders to the flow model: every rank's
// plan comes from the caller's builder (the algorithm registry's), and the
// model runs one rank per symmetry class where the cluster and the plans
// allow it (symmetry.h), every rank otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "algorithms/plan.h"
#include "src/sim/cluster.h"
#include "src/sim/flow_model.h"
#include "src/sim/symmetry.h"

namespace weft::sim {

// Rank r's plan of the call.
using PlanSource = std::function<plan::Plan(int rank)>;

// The symmetries earlier calls of a sweep were checked to have, per shape
// (the caller's key: algorithm, collective, channels, slice), with the
// representatives' plans they were checked for. One memo belongs to one
// cluster. A later call of the same shape whose representatives' plans are
// the memo's scaled (the same steps, peers and connections, every count and
// offset multiplied by one ratio: the same split of a larger buffer) keeps
// the symmetry without building the other ranks' plans: the builders split
// every rank's range alike, so the representatives' blocks growing alike is
// the others' growing alike. Anything else (another step count, a block
// growing by more than the others: an uneven split) checks every plan again.
struct SymmetryMemo {
  struct Entry {
    RankSymmetry sym;
    std::vector<plan::Plan> reps;
  };
  std::map<std::string, Entry> byShape;
  uint64_t reused = 0;  // calls that kept a memo's symmetry
};

struct CallOptions {
  bool useSymmetry = true;  // false: every rank's every step, always
  // Refuse (weftInvalidArgument, before the plans are all built) a call
  // whose model would run more steps; 0: no limit.
  uint64_t maxSteps = 0;
  // Told the steps the model will run and the ranks whose plans they are,
  // before a call of more than largeSteps runs.
  uint64_t largeSteps = 0;
  std::function<void(uint64_t steps, int ranks)> onLarge;
  // Where to remember and reuse checked symmetries (null: check every plan
  // of every call), and this call's shape there.
  SymmetryMemo* memo = nullptr;
  std::string shape;
};

// Whether plan `b` is plan `a` with every count and offset multiplied by
// num / den, and everything the model sees unchanged.
bool planScales(const plan::Plan& a, const plan::Plan& b, uint64_t num, uint64_t den);

// Builds the representatives' plans and keeps them; the others are checked
// against them (movedPlanMatches) and dropped, or not built at all when the
// memo's symmetry holds (SymmetryMemo). At the first that does not match,
// or when the cluster has no symmetry, the full model runs over every
// rank's plan, made twice and one at a time (simulateStreamed). Either way
// the result is the full model's (up to rounding: simulateSymmetric).
RunStats simulateCall(const PlanSource& plans, const Cluster& c, const CallOptions& o = {});

}  // namespace weft::sim
