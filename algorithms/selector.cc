#include "algorithms/selector.h"

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

AlgoId selectAlgo(plan::Coll c, const CostInputs& in, const AlgoFilter& f) {
  double best = std::numeric_limits<double>::infinity();
  int pick = -1;
  for (int a = 0; a < algoCount(); a++) {
    if (!f.allows(c, AlgoId(a)) || !algoSupports(AlgoId(a), c)) continue;
    double t = estimateUs(c, AlgoId(a), in);
    if (t < best) best = t, pick = a;
  }
  if (pick < 0) raise(weftInvalidUsage, "WEFT_ALGO allows no algorithm that implements %s", plan::collName(c));
  return AlgoId(pick);
}

CallChoice selectCall(plan::Coll c, const CostInputs& in, const AlgoFilter& f, const plan::FifoGeometry& g,
                      const ProtoFilter& protos) {
  // Every allowed pair; ties keep the earlier algorithm, then the earlier
  // protocol, so that a protocol without a cost adjustment never changes
  // which algorithm wins.
  double best = std::numeric_limits<double>::infinity();
  CallChoice choice;
  bool anyAlgo = false, found = false;
  for (int a = 0; a < algoCount(); a++) {
    const AlgoId id = AlgoId(a);
    if (!f.allows(c, id) || !algoSupports(id, c)) continue;
    anyAlgo = true;
    for (int p = 0; p < protoCount(); p++) {
      const ProtoId proto = ProtoId(p);
      // Not on this layout or buffer kind (the one-shot plan on FIFOs past
      // 2 ranks), even where WEFT_ALGO forces the algorithm.
      if (!protos.allows(c, proto) || !protoCarries(proto, c, id, in)) continue;
      const double t = protoEstimateUs(c, id, proto, in);
      if (!found || t < best) best = t, choice.algo = id, choice.proto = proto, found = true;
    }
  }
  if (!anyAlgo) raise(weftInvalidUsage, "WEFT_ALGO allows no algorithm that implements %s", plan::collName(c));
  if (!found) raise(weftInvalidUsage, "WEFT_PROTO allows no protocol that runs %s", plan::collName(c));
  choice.shape = shapeCall(c, choice.algo, in, g);
  return choice;
}

}  // namespace weft::algo
