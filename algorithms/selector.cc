#include "algorithms/selector.h"

#include <algorithm>
#include <limits>

#include "algorithms/one_shot.h"
#include "algorithms/registry.h"
#include "src/util/error.h"

namespace weft::algo {

AlgoFilter::AlgoFilter() {
  for (auto& s : allowed) s.set();
}

AlgoFilter parseAlgoFilter(const std::string& spec) {
  auto lookup = [](const std::string& name) {
    if (auto a = findAlgo(name)) return index(*a);
    return kUnknownName;
  };
  SelectionList list = parseSelectionList(spec, "WEFT_ALGO", "algorithm", algoCount(), lookup);
  AlgoFilter f;
  for (int c = 0; c < plan::kNumColls; c++) {
    f.allowed[c] = list.allowed[c];
    if (list.specific[c]) continue;
    bool implementable = false, allowedOne = false;
    for (int a = 0; a < algoCount(); a++) {
      const bool supports = algoSupports(AlgoId(a), plan::Coll(c));
      implementable |= supports;
      // The one-shot algorithm does not run everywhere (ll: one host; FIFOs:
      // 2 ranks): a general list must leave a collective another
      // algorithm to apply to it.
      allowedOne |= supports && list.general.test(size_t(a)) && !isOneShot(AlgoId(a));
    }
    if (implementable && !allowedOne) {
      f.allowed[c].set();
      f.generalIgnored[c] = true;
    }
  }
  return f;
}

AlgoFilter withoutAlgo(AlgoFilter f, AlgoId a) {
  for (int c = 0; c < plan::kNumColls; c++) {
    NameSet without = f.allowed[c];
    without.reset(size_t(index(a)));
    bool left = false;
    for (int b = 0; b < algoCount(); b++) left |= without.test(size_t(b)) && algoSupports(AlgoId(b), plan::Coll(c));
    if (left) f.allowed[c] = without;
  }
  return f;
}

std::string ignoredCollectives(const AlgoFilter& f) {
  std::string out;
  for (int c = 0; c < plan::kNumColls; c++)
    if (f.generalIgnored[c]) {
      if (!out.empty()) out += ", ";
      out += plan::collName(plan::Coll(c));
    }
  return out;
}

namespace {

// What the selector ranks an algorithm by: a measured curve (weft-tune,
// weft-sim --write-tune) where one matches the communicator; otherwise the
// pipelined time of the shape that the call would run with (shapeCall), so
// that the ranking counts what the shape pays (a tree's pipeline fill, a
// ring's steps) and cannot pick an algorithm whose best shape is slower
// than another's. Only algorithms whose pipelines carry a share of the
// call (AlgoInfo::pipelineShare: the hierarchical tree's rail trees) are
// ranked so: their unpipelined terms leave out a fill of many hops that
// the shape pays. The others keep their own estimates: the one-shot
// algorithm is not a pipeline; a ring-like algorithm's shaped time charges
// a hop's latency to every slice of every step where its FIFO slots keep
// several slices in flight (a flat ring at 4 GB across hosts would lose
// to the double tree by that alone); and the double tree's shaped time
// spreads none of its bytes over a host's NICs, which puts it behind
// `hier` on the 4-host test cluster at 64 KB (docs/tuning.md).
bool ranksByEstimate(plan::Coll c, AlgoId a, const CostInputs& in) {
  return in.nranks <= 1 || isOneShot(a) || !algoInfo(a).pipelineShare || usesMeasuredCurve(c, a, in);
}

double rankingUs(plan::Coll c, AlgoId a, const CostInputs& in, const CallShape& shape) {
  if (!algoApplies(a, c, in)) return std::numeric_limits<double>::infinity();
  if (ranksByEstimate(c, a, in)) return estimateUs(c, a, in);
  return shape.us;
}

double protoRankingUs(plan::Coll c, AlgoId a, ProtoId p, const CostInputs& in, const CallShape& shape) {
  if (ranksByEstimate(c, a, in)) return protoEstimateUs(c, a, p, in);
  const double us = rankingUs(c, a, in, shape);
  const ProtoInfo& info = protoInfo(p);
  return info.adjustUs ? info.adjustUs(c, a, in, us) : us;
}

}  // namespace

AlgoId selectAlgo(plan::Coll c, const CostInputs& in, const AlgoFilter& f) {
  double best = std::numeric_limits<double>::infinity();
  int pick = -1;
  const plan::FifoGeometry g;  // the communicator's defaults
  for (int a = 0; a < algoCount(); a++) {
    if (!f.allows(c, AlgoId(a)) || !algoSupports(AlgoId(a), c)) continue;
    double t = rankingUs(c, AlgoId(a), in, shapeCall(c, AlgoId(a), in, g));
    if (t < best) best = t, pick = a;
  }
  if (pick < 0) raise(weftInvalidUsage, "WEFT_ALGO allows no algorithm that implements %s", plan::collName(c));
  return AlgoId(pick);
}

namespace {

// An allowed (algorithm, protocol) pair, with a bound its ranking time
// cannot go below, so that the shapes of pairs that cannot win are never
// searched (selectCall runs on every call).
struct Candidate {
  AlgoId algo;
  ProtoId proto;
  double bound;
  bool exact;  // bound is the ranking time itself (no shape to search)
};

// The shaped time is at least the unpipelined estimate less one hop: a
// ring's pays its latency term S x c times and its bytes at no more than
// the link's bandwidth; a pipeline's (D + S - 1)(c L + T/S) >= D L + T, D
// being the latency term over L rounded. Protocol adjustments are taken to
// keep the order of the times they adjust.
Candidate candidate(plan::Coll c, AlgoId a, ProtoId p, const CostInputs& in) {
  if (ranksByEstimate(c, a, in)) return {a, p, protoEstimateUs(c, a, p, in), true};
  if (!algoApplies(a, c, in)) return {a, p, std::numeric_limits<double>::infinity(), true};
  const double lower = estimateUs(c, a, in) - hopLatencyUs(in);
  const ProtoInfo& info = protoInfo(p);
  return {a, p, info.adjustUs ? info.adjustUs(c, a, in, lower) : lower, false};
}

}  // namespace

CallChoice selectCall(plan::Coll c, const CostInputs& in, const AlgoFilter& f, const plan::FifoGeometry& g,
                      const ProtoFilter& protos) {
  Candidate cands[kMaxAlgos * kMaxProtos];
  int nc = 0;
  bool anyAlgo = false;
  for (int a = 0; a < algoCount(); a++) {
    const AlgoId id = AlgoId(a);
    if (!f.allows(c, id) || !algoSupports(id, c)) continue;
    anyAlgo = true;
    for (int p = 0; p < protoCount(); p++) {
      const ProtoId proto = ProtoId(p);
      // Not on this layout or buffer kind (the one-shot plan on FIFOs past
      // 2 ranks), even where WEFT_ALGO forces the algorithm.
      if (!protos.allows(c, proto) || !protoCarries(proto, c, id, in)) continue;
      cands[nc++] = candidate(c, id, proto, in);
    }
  }
  if (!anyAlgo) raise(weftInvalidUsage, "WEFT_ALGO allows no algorithm that implements %s", plan::collName(c));
  if (nc == 0) raise(weftInvalidUsage, "WEFT_PROTO allows no protocol that runs %s", plan::collName(c));
  // Cheapest bound first; ties keep the earlier algorithm, then the earlier
  // protocol, so that a protocol without a cost adjustment never changes
  // which algorithm wins. Stable: pairs arrive in that order.
  std::stable_sort(cands, cands + nc, [](const Candidate& x, const Candidate& y) { return x.bound < y.bound; });
  auto earlier = [](const Candidate& x, const CallChoice& y) {
    return index(x.algo) != index(y.algo) ? index(x.algo) < index(y.algo) : index(x.proto) < index(y.proto);
  };
  double best = std::numeric_limits<double>::infinity();
  CallChoice choice;
  bool found = false, shaped = false;
  for (int i = 0; i < nc; i++) {
    const Candidate& k = cands[i];
    if (found && k.bound > best) break;
    CallShape shape;
    if (!k.exact) shape = shapeCall(c, k.algo, in, g);
    const double t = k.exact ? k.bound : protoRankingUs(c, k.algo, k.proto, in, shape);
    if (!found || t < best || (t == best && earlier(k, choice))) {
      best = t, choice = {k.algo, k.proto, shape}, found = true, shaped = !k.exact;
    }
  }
  if (!shaped) choice.shape = shapeCall(c, choice.algo, in, g);
  return choice;
}

}  // namespace weft::algo
