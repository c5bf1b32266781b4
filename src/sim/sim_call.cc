#include "src/sim/sim_call.h"

#include <numeric>

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

// The representatives' plans of `sym`, in rank order, refused past the limit.
void buildRepresentatives(const PlanSource& plans, const RankSymmetry& sym, const CallOptions& o,
                          std::vector<plan::Plan>* reps) {
  uint64_t steps = 0;
  for (int r = 0; r < sym.nranks; r++)
    if (sym.rep(r) == r) {
      reps->push_back(plans(r));
      steps += reps->back().stepCount();
    }
  if (o.maxSteps && steps > o.maxSteps) refuse(steps, o.maxSteps, "(one rank per symmetry class)");
}

// Whether every rank's plan is its representative's moved by `sym`; the
// representatives' plans are left in `reps` either way.
bool symmetricPlans(const PlanSource& plans, const RankSymmetry& sym, const CallOptions& o,
                    std::vector<plan::Plan>* reps) {
  std::vector<int> index(size_t(sym.nranks), -1);
  buildRepresentatives(plans, sym, o, reps);
  for (int r = 0, i = 0; r < sym.nranks; r++)
    if (sym.rep(r) == r) index[size_t(r)] = i++;
  for (int r = 0; r < sym.nranks; r++)
    if (sym.rep(r) != r && !movedPlanMatches(sym, r, (*reps)[size_t(index[size_t(sym.rep(r))])], plans(r)))
      return false;
  return true;
}

uint64_t elementsMoved(const std::vector<plan::Plan>& plans) {
  uint64_t sum = 0;
  for (const auto& p : plans)
    for (const auto& ch : p.channels)
      for (const auto& s : ch.steps) sum += s.count;
  return sum;
}

// The memo's symmetry for this call's shape, when the representatives'
// plans are the memo's scaled by one ratio (SymmetryMemo).
bool rememberedSymmetry(const PlanSource& plans, const CallOptions& o, RankSymmetry* sym,
                        std::vector<plan::Plan>* reps) {
  if (!o.memo) return false;
  const auto it = o.memo->byShape.find(o.shape);
  if (it == o.memo->byShape.end()) return false;
  const SymmetryMemo::Entry& e = it->second;
  buildRepresentatives(plans, e.sym, o, reps);
  uint64_t num = elementsMoved(*reps), den = elementsMoved(e.reps);
  const uint64_t g = std::gcd(num, den);
  if (g) num /= g, den /= g;
  bool scales = reps->size() == e.reps.size() && (num == 0) == (den == 0);
  for (size_t i = 0; scales && i < reps->size(); i++) scales = planScales(e.reps[i], (*reps)[i], num, den);
  if (!scales) {
    reps->clear();
    return false;
  }
  *sym = e.sym;
  o.memo->reused++;
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

bool planScales(const plan::Plan& a, const plan::Plan& b, uint64_t num, uint64_t den) {
  using Wide = unsigned __int128;
  auto scaled = [&](uint64_t x, uint64_t y) { return Wide(y) * den == Wide(x) * num; };
  if (a.nranks != b.nranks || a.rank != b.rank || a.coll != b.coll || a.elemSize != b.elemSize ||
      a.sliceBytes != b.sliceBytes || a.wire != b.wire || a.channels.size() != b.channels.size())
    return false;
  for (size_t ch = 0; ch < a.channels.size(); ch++) {
    const auto& x = a.channels[ch].steps;
    const auto& y = b.channels[ch].steps;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); i++) {
      plan::Step s = x[i];
      const plan::Step& t = y[i];
      if (!scaled(s.count, t.count) || !scaled(s.srcOff, t.srcOff) || !scaled(s.dstOff, t.dstOff)) return false;
      s.count = t.count;
      s.srcOff = t.srcOff;
      s.dstOff = t.dstOff;
      if (!(s == t)) return false;
    }
  }
  return true;
}

RunStats simulateCall(const PlanSource& plans, const Cluster& c, const CallOptions& o) {
  validate(c);
  const int n = int(c.hostOf.size());
  if (n < 1) raise(weftInvalidArgument, "sim: a cluster without ranks");
  std::vector<plan::Plan> all;
  RankSymmetry sym;
  bool symmetric = o.useSymmetry && rememberedSymmetry(plans, o, &sym, &all);
  if (o.useSymmetry && !symmetric && trySymmetry(plans, c, o, &sym, &all)) {
    symmetric = true;
    if (o.memo) o.memo->byShape[o.shape] = SymmetryMemo::Entry{sym, all};
  }
  if (symmetric) {
    uint64_t steps = 0;
    for (const auto& p : all) steps += p.stepCount();
    announce(o, steps, int(all.size()));
    return simulateSymmetric(all, c, sym);
  }
  // Every rank's plan, made on demand (simulateStreamed): refused before the
  // model takes memory when rank 0's steps times the ranks, or the steps
  // counted so far, exceed the limit.
  std::vector<plan::Plan>().swap(all);
  const uint64_t first = plans(0).stepCount();
  if (o.maxSteps && first * uint64_t(n) > o.maxSteps) refuse(first * uint64_t(n), o.maxSteps, "about");
  int sized = 0;
  return simulateStreamed(plans, c, [&](uint64_t steps) {
    if (o.maxSteps && steps > o.maxSteps) refuse(steps, o.maxSteps, "more than");
    if (++sized == n) announce(o, steps, n);
  });
}

}  // namespace weft::sim
