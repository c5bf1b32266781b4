#include "src/sim/sim_call.h"

#include "src/sim/symmetry.h"
#include "src/util/error.h"

namespace weft::sim {
namespace {

void refuse(uint64_t steps, uint64_t limit, const char* what) {
  raise(weftInvalidArgument, "the model needs %s %llu steps (~%llu MB of model state, more than the %llu MB allowed); "
        "use fewer ranks or a smaller -e", what, (unsigned long long)steps,
        (unsigned long long)(steps * kBytesPerStep >> 20), (unsigned long long)(limit * kBytesPerStep >> 20));
}

void announce(const CallOptions& o, uint64_t steps, int ranks) {
  if (o.onLarge && o.largeSteps && steps > o.largeSteps) o.onLarge(steps, ranks);
}

// Whether every rank's plan is its representative's moved by `sym`; the
// representatives' plans are left in `reps` either way.
bool symmetricPlans(const PlanSource& plans, const RankSymmetry& sym, const CallOptions& o,
                    std::vector<plan::Plan>* reps) {
  std::vector<int> index(size_t(sym.nranks), -1);
  uint64_t steps = 0;
  for (int r = 0; r < sym.nranks; r++)
    if (sym.rep(r) == r) {
      index[size_t(r)] = int(reps->size());
      reps->push_back(plans(r));
      steps += reps->back().stepCount();
    }
  if (o.maxSteps && steps > o.maxSteps) refuse(steps, o.maxSteps, "(one rank per symmetry class)");
  for (int r = 0; r < sym.nranks; r++)
    if (sym.rep(r) != r && !movedPlanMatches(sym, r, (*reps)[size_t(index[size_t(sym.rep(r))])], plans(r)))
      return false;
  return true;
}

// The plans of a call under the largest symmetry they have of those the
// cluster has (shift and rotation, one of them, or none).
bool trySymmetry(const PlanSource& plans, const Cluster& c, const CallOptions& o, RankSymmetry* sym,
                 std::vector<plan::Plan>* reps) {
  const RankSymmetry both = findSymmetry(c, true, true);
  if (!both.reduces()) return false;
  std::vector<RankSymmetry> tries{both};
  if (both.rotate > 1 && both.period < both.nranks) {
    tries.push_back(findSymmetry(c, true, false));
    tries.push_back(findSymmetry(c, false, true));
  }
  for (RankSymmetry& t : tries) {
    if (!t.reduces()) continue;
    reps->clear();
    if (symmetricPlans(plans, t, o, reps)) {
      *sym = std::move(t);
      return true;
    }
  }
  reps->clear();
  return false;
}

}  // namespace

RunStats simulateCall(const PlanSource& plans, const Cluster& c, const CallOptions& o) {
  validate(c);
  const int n = int(c.hostOf.size());
  if (n < 1) raise(weftInvalidArgument, "sim: a cluster without ranks");
  std::vector<plan::Plan> all;
  RankSymmetry sym;
  if (o.useSymmetry && trySymmetry(plans, c, o, &sym, &all)) {
    uint64_t steps = 0;
    for (const auto& p : all) steps += p.stepCount();
    announce(o, steps, int(all.size()));
    return simulateSymmetric(all, c, sym);
  }
  // Every rank's plan: refused before they are built when rank 0's steps
  // times the ranks already exceed the limit.
  all.push_back(plans(0));
  uint64_t steps = all.front().stepCount();
  if (o.maxSteps && all.front().stepCount() * uint64_t(n) > o.maxSteps)
    refuse(all.front().stepCount() * uint64_t(n), o.maxSteps, "about");
  for (int r = 1; r < n; r++) {
    all.push_back(plans(r));
    steps += all.back().stepCount();
    if (o.maxSteps && steps > o.maxSteps) refuse(steps, o.maxSteps, "more than");
  }
  announce(o, steps, n);
  return simulate(all, c);
}

}  // namespace weft::sim
