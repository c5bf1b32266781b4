// Algorithm selection: the cheapest algorithm by the cost model among those
// WEFT_ALGO allows.
//
// WEFT_ALGO syntax: a list of names ("ring,tree"), or an exclusion list
// ("^tree"), optionally per collective after a ';':
// "ring;allreduce:tree,ring". Names: ring, tree (double binary tree),
// binarytree. A collective without its own entry uses the general one.
#pragma once

#include <array>
#include <string>

#include "algorithms/cost_model.h"
#include "algorithms/pipeline_model.h"
#include "algorithms/plan.h"

namespace weft::algo {

struct AlgoFilter {
  // allowed[coll][algo]; all true when WEFT_ALGO is unset.
  std::array<std::array<bool, kNumAlgos>, 7> allowed;
  // Collectives the general list (no per-collective entry) would have left
  // without an algorithm that implements them: `tree` names an AllReduce
  // algorithm and must not break a job's AllGathers, so these keep every
  // algorithm (the caller says so in the log). A per-collective entry that
  // leaves none is still an error at selection: that was asked for by name.
  std::array<bool, 7> generalIgnored{};
  AlgoFilter();
};

// "AllGather, Broadcast" for the collectives f.generalIgnored names; "" if none.
std::string ignoredCollectives(const AlgoFilter& f);

// Throws weftInvalidArgument naming the bad token.
AlgoFilter parseAlgoFilter(const std::string& spec);

// The allowed, supporting algorithm with the least estimated time; throws
// weftInvalidUsage when the filter leaves none for this collective.
Algo selectAlgo(plan::Coll c, const CostInputs& in, const AlgoFilter& f);

// The whole choice for a call: the algorithm (selectAlgo), then its
// channels and slice (shapeCall) for FIFOs of geometry g.
struct CallChoice {
  Algo algo = Algo::Ring;
  CallShape shape;
};
CallChoice selectCall(plan::Coll c, const CostInputs& in, const AlgoFilter& f, const plan::FifoGeometry& g);

}  // namespace weft::algo
