// The hierarchical algorithm's registry entry and cost terms (docs/tuning.md).
#include <algorithm>
#include <cmath>

#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"

namespace weft::algo {
namespace {

using plan::Coll;

// Per level: (L-1) hops of the host ring at shared-memory pace and (H-1) hops
// of a rail ring at the network's, once per phase (AllReduce has two of
// each). The network carries (H-1)/H of the bytes per phase and host, spread
// over the host's NICs (one per rail at most).
CostTerms hierCost(Coll c, const CostInputs& in, double B) {
  const int n = std::max(in.nranks, 1);
  const int H = std::clamp(in.nHosts, 1, n);
  const int L = (n + H - 1) / H;
  const int rails = std::clamp(in.nicsPerHost, 1, L);
  const double phases = c == Coll::AllReduce ? 2.0 : 1.0;
  const double lat = phases * ((L - 1) * in.intra.latencyUs + (H - 1) * in.inter.latencyUs);
  double bytes = 0;
  if (L > 1) bytes += phases * (L - 1) / L * B / (1e3 * in.intra.bandwidthGBs);
  if (H > 1) bytes += phases * (H - 1) / H * B / (1e3 * in.inter.bandwidthGBs * rails);
  return {lat, bytes};
}

// For the pipeline model: rings throughout (steps in sequence, each a block
// per rank), so it keeps whole slots. The model prices the steps through
// hierCost's latency term (host hops and rail hops); this count only marks
// the algorithm as ring-like.
double hierSteps(Coll c, int n) { return c == Coll::AllReduce ? 2.0 * (n - 1) : double(n - 1); }

std::array<bool, plan::kNumColls> hierCollectives() {
  std::array<bool, plan::kNumColls> s{};
  for (int c = 0; c < plan::kNumColls; c++) s[c] = hierSupports(Coll(c));
  return s;
}

// The rail ring's (H-1) hops per phase become a binary tree's depth (up and
// down, ceil(log2 H) network hops each); an interior rail rank takes its
// rail block from two children and its parent (3 blocks, as binarytree),
// spread over the host's NICs.
CostTerms hierTreeCost(Coll, const CostInputs& in, double B) {
  const int n = std::max(in.nranks, 1);
  const int H = std::clamp(in.nHosts, 1, n);
  const int L = (n + H - 1) / H;
  const int rails = std::clamp(in.nicsPerHost, 1, L);
  const double depth = H > 1 ? std::ceil(std::log2(double(H))) : 0.0;
  const double lat = 2 * ((L - 1) * in.intra.latencyUs + depth * in.inter.latencyUs);
  double bytes = 0;
  if (L > 1) bytes += 2.0 * (L - 1) / L * B / (1e3 * in.intra.bandwidthGBs);
  if (H > 1) bytes += 3.0 * B / (1e3 * in.inter.bandwidthGBs * rails);
  return {lat, bytes};
}

// The rail trees carry what the host's reduce-scatter left each local rank:
// 1/L of the data.
double hierTreePipelineShare(Coll, const CostInputs& in) {
  const int n = std::max(in.nranks, 1);
  const int H = std::clamp(in.nHosts, 1, n);
  return 1.0 / double((n + H - 1) / H);
}

// On one host it is the host ring alone, with one rank per host a plain
// binary tree: the ring and binarytree entries already cover those.
bool hierTreeApplies(Coll, const CostInputs& in) {
  const int H = std::clamp(in.nHosts, 1, std::max(in.nranks, 1));
  return H > 1 && in.nranks > H;
}

std::array<bool, plan::kNumColls> allReduceOnly() {
  std::array<bool, plan::kNumColls> s{};
  s[static_cast<int>(Coll::AllReduce)] = true;
  return s;
}

}  // namespace

AlgoInfo hierTreeAlgoInfo() {
  AlgoInfo info{"hiertree", allReduceOnly(), buildHierarchicalTree, hierTreeCost, nullptr};
  info.applies = hierTreeApplies;
  info.pipelineShare = hierTreePipelineShare;
  return info;
}

AlgoInfo hierAlgoInfo() { return AlgoInfo{"hier", hierCollectives(), buildHierarchical, hierCost, hierSteps}; }

}  // namespace weft::algo
