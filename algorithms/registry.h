// The algorithm registry: one AlgoInfo per algorithm, holding everything
// the rest of weft needs to know about it (its name for WEFT_ALGO, tune
// files and logs; what it implements; its plan builder; its cost terms).
// The selector, launch, weft-select, weft-tune, tune files and the plan
// verifier iterate the registry, so an algorithm is one entry. The
// built-ins are listed in builtin_algos.cc.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/coll_args.h"
#include "algorithms/collectives.h"
#include "algorithms/cost_model.h"
#include "algorithms/plan.h"

namespace weft::algo {

struct AlgoInfo {
  std::string name;  // lower case: "ring", "tree", "binarytree"
  std::array<bool, plan::kNumColls> supports{};  // indexed by plan::Coll
  // Builds one rank's plan; everything it needs from the communicator
  // comes in CollArgs (ring orders, hosts).
  plan::Plan (*build)(const CollArgs&) = nullptr;
  // The analytic latency and bytes terms for in.nranks ranks moving `bytes`
  // (nccl-tests' size) over the links of `in`; only called for supported
  // collectives and nranks > 1.
  CostTerms (*cost)(plan::Coll c, const CostInputs& in, double bytes) = nullptr;
  // For the pipeline model (pipeline_model.h): the number of ring steps a
  // call takes, each moving one block per rank at once; 0 (or no function)
  // when the call is a pipeline of hops instead (chains, trees).
  double (*ringSteps)(plan::Coll c, int nranks) = nullptr;
  // For a pipeline: the fraction of a channel's bytes that one pipeline
  // carries (a tree per rail after a reduce-scatter in the host carries
  // 1/L of them), so the piece count, and with it the fill time, is
  // counted on what the pipeline really moves; nullptr: all of them.
  double (*pipelineShare)(plan::Coll c, const CostInputs& in) = nullptr;
  // Whether the algorithm is worth running on the communicator's layout
  // (in.nranks on in.nHosts hosts); nullptr: everywhere. Where it does not
  // apply (an algorithm that degenerates into another one there) its cost
  // is infinite, so the selector picks it only when WEFT_ALGO leaves
  // nothing else. Its builder must still produce a correct plan.
  bool (*applies)(plan::Coll c, const CostInputs& in) = nullptr;
  // For a pipeline: how many pipelines split a channel's bytes over the
  // same links (the double tree's two trees, each half the slices). Each
  // carries 1/k of them in pieces of its own, so the pieces, the hand-offs
  // and the fill are counted per pipeline; the links carry all of them.
  int pipelinesPerChannel = 1;

  bool implements(plan::Coll c) const { return supports[static_cast<int>(c)]; }
};

int algoCount();
// a must be < algoCount().
const AlgoInfo& algoInfo(AlgoId a);
const char* algoName(AlgoId a);
bool algoSupports(AlgoId a, plan::Coll c);
// algoSupports, and the entry's applies() for this layout.
bool algoApplies(AlgoId a, plan::Coll c, const CostInputs& in);
// By name, case-insensitive; nullopt when none has it.
std::optional<AlgoId> findAlgo(std::string_view name);

// Adds an algorithm after those registered so far and returns its id.
// Every rank must register the same algorithms in the same order (ids are
// compared across ranks). Throws weftInvalidArgument for a duplicate or
// empty name, a missing builder or cost function, or a full registry
// (kMaxAlgos).
AlgoId registerAlgo(AlgoInfo info);

// The built-in entries, in AlgoId order (builtin_algos.cc).
std::vector<AlgoInfo> builtinAlgos();
// The hierarchical algorithm's entry, "hier" (hier_algo.cc).
AlgoInfo hierAlgoInfo();
// "hiertree": hier's AllReduce with a binary tree per rail across hosts;
// applies on several hosts with several ranks on some host (hier_algo.cc).
AlgoInfo hierTreeAlgoInfo();

}  // namespace weft::algo
