// Selection: for each call, the (algorithm, protocol) among those WEFT_ALGO
// and WEFT_PROTO allow whose call is fastest as it would run: each
// algorithm's channels and slice by the pipeline model (shapeCall), ranked
// by that shape's pipelined time; a measured curve where one matches the
// communicator, and the one-shot algorithm's own estimate, rank those
// (docs/tuning.md, "What the selector ranks by").
//
// WEFT_ALGO and WEFT_PROTO take NCCL-style lists (selection_list.h):
// "ring,tree", "^tree", "ring;allreduce:tree,ring". Algorithm names are the
// registry's (algorithms/registry.h): ring, tree (double binary tree),
// binarytree. A collective without its own entry uses the general one.
#pragma once

#include <array>
#include <string>

#include "algorithms/cost_model.h"
#include "algorithms/pipeline_model.h"
#include "algorithms/plan.h"
#include "algorithms/protocols.h"
#include "algorithms/selection_list.h"

namespace weft::algo {

struct AlgoFilter {
  // allowed[coll] holds the AlgoIds; all set when WEFT_ALGO is unset.
  std::array<NameSet, plan::kNumColls> allowed;
  // Collectives the general list (no per-collective entry) would have left
  // without an algorithm that implements them: `tree` names an AllReduce
  // algorithm and must not break a job's AllGathers, so these keep every
  // algorithm (the caller says so in the log). A per-collective entry that
  // leaves none is still an error at selection: that was asked for by name.
  std::array<bool, plan::kNumColls> generalIgnored{};
  AlgoFilter();
  bool allows(plan::Coll c, AlgoId a) const { return allowed[static_cast<int>(c)].test(size_t(index(a))); }
};

// f without algorithm a, except for collectives a would be the only one left.
AlgoFilter withoutAlgo(AlgoFilter f, AlgoId a);

// "AllGather, Broadcast" for the collectives f.generalIgnored names; "" if none.
std::string ignoredCollectives(const AlgoFilter& f);

// Throws weftInvalidArgument naming the bad token.
AlgoFilter parseAlgoFilter(const std::string& spec);

// The allowed, supporting algorithm that selectCall would rank first for
// the default FIFO geometry (protocols aside); throws
// weftInvalidUsage when the filter leaves none for this collective.
AlgoId selectAlgo(plan::Coll c, const CostInputs& in, const AlgoFilter& f);

// The whole choice for a call: the algorithm and protocol, then the
// algorithm's channels and slice (shapeCall) for FIFOs of geometry g.
struct CallChoice {
  AlgoId algo = kRing;
  ProtoId proto = kSimple;
  CallShape shape;
};
CallChoice selectCall(plan::Coll c, const CostInputs& in, const AlgoFilter& f, const plan::FifoGeometry& g,
                      const ProtoFilter& protos = ProtoFilter{});

}  // namespace weft::algo
