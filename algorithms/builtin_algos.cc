// The built-in algorithms' registry entries: ring, binary tree, double
// binary tree, with their analytic cost terms (docs/tuning.md); the
// hierarchical ones' entries are in hier_algo.cc, one-shot's in one_shot.cc,
// recursive doubling's in recursive_doubling.cc.
#include <algorithm>
#include <cmath>

#include "algorithms/double_tree.h"
#include "algorithms/one_shot.h"
#include "algorithms/recursive_doubling.h"
#include "algorithms/registry.h"
#include "algorithms/ring.h"
#include "algorithms/tree.h"

namespace weft::algo {
namespace {

using plan::Coll;

double log2ceil(int x) { return x <= 1 ? 0.0 : std::ceil(std::log2(double(x))); }

bool multiHost(const CostInputs& in) { return std::clamp(in.nHosts, 1, in.nranks) > 1; }

// Tree depth: the chain inside a host plus the tree over hosts.
double treeLatencyUs(const CostInputs& in) {
  const double n = std::max(in.nranks, 1);
  const int hosts = std::clamp(in.nHosts, 1, in.nranks);
  const double perHost = std::ceil(n / hosts);
  const double chainHops = perHost - 1, netHops = log2ceil(hosts);
  return chainHops * in.intra.latencyUs + netHops * (multiHost(in) ? in.inter.latencyUs : 0.0);
}

CostTerms ringCost(Coll c, const CostInputs& in, double B) {
  const double n = std::max(in.nranks, 1);
  // A ring step waits for its slowest hop; its data crosses the slowest link.
  const double hopLat = hopLatencyUs(in);
  const double bwBytesPerUs = linkBytesPerUs(in);
  switch (c) {
    case Coll::AllReduce: return {2 * (n - 1) * hopLat, 2 * (n - 1) / n * B / bwBytesPerUs};
    case Coll::ReduceScatter:
    case Coll::AllGather: return {(n - 1) * hopLat, (n - 1) / n * B / bwBytesPerUs};
    default: return {(n - 1) * hopLat, B / bwBytesPerUs};  // pipelined chain
  }
}

// AllReduce is a reduce-scatter then an all-gather; ReduceScatter and
// AllGather are one of the two; Broadcast and Reduce are chains.
double ringSteps(Coll c, int n) {
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1);
    case Coll::ReduceScatter:
    case Coll::AllGather: return double(n - 1);
    default: return 0;
  }
}

CostTerms binaryTreeCost(Coll, const CostInputs& in, double B) {
  // Up and down run at once; an interior rank takes in B from each of two
  // children and B from its parent.
  const double lat = multiHost(in) ? treeLatencyUs(in) : log2ceil(in.nranks) * in.intra.latencyUs;
  return {2 * lat, 3 * B / linkBytesPerUs(in)};
}

CostTerms doubleTreeCost(Coll, const CostInputs& in, double B) {
  // Half the data per tree: interior in one (2 x B/2 up + B/2 down), a leaf
  // in the other (B/2 down): 2B in, like a ring's 2(n-1)/n B. Inside a host
  // the trees are chains (buildDoubleTree), so one host pays the chain's
  // depth, not log2(n).
  return {2 * treeLatencyUs(in), 2 * B / linkBytesPerUs(in)};
}

plan::Plan buildBinaryTree(const CollArgs& a) { return buildTree(a); }

std::array<bool, plan::kNumColls> ringCollectives() {
  std::array<bool, plan::kNumColls> s{};
  for (int c = 0; c < plan::kNumColls; c++) s[c] = ringSupports(Coll(c));
  return s;
}

std::array<bool, plan::kNumColls> allReduceOnly() {
  std::array<bool, plan::kNumColls> s{};
  s[static_cast<int>(Coll::AllReduce)] = true;
  return s;
}

}  // namespace

std::vector<AlgoInfo> builtinAlgos() {
  AlgoInfo ring{"ring", ringCollectives(), buildRing, ringCost, ringSteps};
  AlgoInfo binaryTree{"binarytree", allReduceOnly(), buildBinaryTree, binaryTreeCost, nullptr};
  AlgoInfo doubleTree{"tree", allReduceOnly(), buildDoubleTree, doubleTreeCost, nullptr};
  return {ring, binaryTree, doubleTree, hierAlgoInfo(), oneShotAlgo(), hierTreeAlgoInfo(),
          recursiveDoublingAlgo()};
}

}  // namespace weft::algo
