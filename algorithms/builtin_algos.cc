// The built-in algorithms' registry entries: ring, binary tree, double
// binary tree, with their analytic cost terms (docs/tuning.md); the
// hierarchical ones' entries are in hier_algo.cc, one-shot's in one_shot.cc,
// recursive doubling's in recursive_doubling.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

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

double ranksPerHost(const CostInputs& in) {
  return std::ceil(double(std::max(in.nranks, 1)) / std::clamp(in.nHosts, 1, std::max(in.nranks, 1)));
}

// The double tree's depth: a tree over hosts, whose ranks form a chain in
// each host; a child host hangs off the head of its parent's chain or the
// next rank, so every level but the last adds an intra hop to the leaf
// host's chain (64 x 8: 6 network hops and 7 + 5 intra hops).
double doubleTreeLatencyUs(const CostInputs& in) {
  const int hosts = std::clamp(in.nHosts, 1, in.nranks);
  const double netHops = log2ceil(hosts);
  // The longest chain paces the tree: on uneven hosts, the fullest host's.
  const double chain = (in.hostRanksMax > 0 ? std::min(in.hostRanksMax, in.nranks) : ranksPerHost(in)) - 1;
  const double intraHops = chain > 0 ? chain + std::max(netHops - 1, 0.0) : 0.0;
  return intraHops * in.intra.latencyUs + netHops * (multiHost(in) ? in.inter.latencyUs : 0.0);
}

// The single binary tree's depth over rank numbers (binaryTreeParents) on
// the ranks' hosts (CostInputs::hostRuns): the longest path from a rank to
// the root, each hop at the latency of the link it takes. 3 + 1 (0 <- 2 <-
// {1, 3}): one intra and one network hop, where hosts of ceil(n/H) ranks
// gave two network hops (1.17x behind the binary tree at 8 B-2 KB in
// weft-sim); 64 x 8: 2 intra hops and 7 network hops.
struct TreePaths {
  int nranks = 0, nHosts = 0, nHostRuns = -1;
  uint16_t runs[kMaxHostRuns] = {}, runHosts[kMaxHostRuns] = {};
  std::vector<std::pair<int, int>> hops;  // (intra, network) hops of each distinct root path

  bool describes(const CostInputs& in) const {
    return nranks == in.nranks && nHosts == in.nHosts && nHostRuns == in.nHostRuns &&
           !std::memcmp(runs, in.hostRuns, sizeof runs) && !std::memcmp(runHosts, in.hostRunHost, sizeof runHosts);
  }
};

// Walked once per layout (a selection prices the tree for every shape it
// tries; 4096 ranks take ~50k hops).
const TreePaths& binaryTreePaths(const CostInputs& in) {
  thread_local TreePaths cached;
  if (cached.describes(in)) return cached;
  TreePaths t;
  t.nranks = in.nranks, t.nHosts = in.nHosts, t.nHostRuns = in.nHostRuns;
  std::memcpy(t.runs, in.hostRuns, sizeof t.runs);
  std::memcpy(t.runHosts, in.hostRunHost, sizeof t.runHosts);
  const int n = std::max(in.nranks, 1);
  const std::vector<int> parent = binaryTreeParents(n), host = hostOfRanks(in);
  for (int r = 0; r < n; r++) {
    std::pair<int, int> h{0, 0};
    for (int x = r; parent[size_t(x)] >= 0; x = parent[size_t(x)])
      (host[size_t(x)] != host[size_t(parent[size_t(x)])] ? h.second : h.first)++;
    if (std::find(t.hops.begin(), t.hops.end(), h) == t.hops.end()) t.hops.push_back(h);
  }
  cached = std::move(t);
  return cached;
}

double binaryTreeDepthUs(const CostInputs& in) {
  double deepest = 0;
  for (auto [intra, net] : binaryTreePaths(in).hops)
    deepest = std::max(deepest, intra * in.intra.latencyUs + net * in.inter.latencyUs);
  return deepest;
}

// A ring's steps are not in lockstep: a rank's step waits for its input
// block alone (its own sends leave without waiting to arrive), so a call
// is the longer of two paths. The data's: a block's chain through `hops`
// ranks in ring order, each hop its own latency and the block's transfer
// over that hop's link; on a ring that visits the hosts in order (the
// communicator's rings do), a lap of n hops crosses the network H times,
// so the chain crosses it at most ceil(hops H / n) times and stays inside a
// host for the rest. The busiest link's: every step's block through the
// slowest link back to back, with the hops that fill and drain it. The
// latency term is what the longer path adds to the bytes term (weft-sim,
// 8 + 1 ranks, 256 KB AllReduce: 50 us simulated, 117 with every step at
// the network's latency, 45 this way).
double ringOverlapLatencyUs(const CostInputs& in, double hops, double blockBytes) {
  const double n = std::max(in.nranks, 1), H = std::clamp(in.nHosts, 1, std::max(in.nranks, 1));
  const double crossings = H > 1 ? std::min(hops, std::ceil(hops * H / n)) : 0.0;
  const double hopsLat = crossings * in.inter.latencyUs + (hops - crossings) * in.intra.latencyUs;
  // The chain's transfers less the busiest link's, hop by hop (exactly 0 on
  // one host, where every hop is that link, so the ring keeps its ties).
  const double W = linkBytesPerUs(in), netBw = 1e3 * std::min(in.inter.bandwidthGBs, in.intra.bandwidthGBs);
  const double beyondBusy = crossings * blockBytes * (1 / netBw - 1 / W) +
                            (hops - crossings) * blockBytes * (1 / (1e3 * in.intra.bandwidthGBs) - 1 / W);
  // The busiest link's path: its sender's first step sends the rank's own
  // block, the next waits for the predecessor's first block to arrive (a
  // gap of that hop's latency and transfer less the link's own), and the
  // last block takes a hop to arrive. The predecessor is across the network
  // where a host has a single rank (3 + 1 AllGather, 256 KB: 25.7 us
  // simulated; 20.7 with the one hop alone).
  const int lmin = in.hostRanksMin > 0 ? in.hostRanksMin : int(std::ceil(n / H));
  const double predLat = H > 1 && lmin == 1 ? in.inter.latencyUs : in.intra.latencyUs;
  const double predBw = H > 1 && lmin == 1 ? netBw : 1e3 * in.intra.bandwidthGBs;
  const double gap = hops >= 2 ? std::max(predLat + blockBytes / predBw - blockBytes / W, 0.0) : 0.0;
  return std::max(hopsLat + beyondBusy, hopLatencyUs(in) + gap);
}

CostTerms ringCost(Coll c, const CostInputs& in, double B) {
  const double n = std::max(in.nranks, 1);
  const double bwBytesPerUs = linkBytesPerUs(in);
  switch (c) {
    case Coll::AllReduce: return {ringOverlapLatencyUs(in, 2 * (n - 1), B / n), 2 * (n - 1) / n * B / bwBytesPerUs};
    case Coll::ReduceScatter:
    case Coll::AllGather: return {ringOverlapLatencyUs(in, n - 1, B / n), (n - 1) / n * B / bwBytesPerUs};
    default: return {(n - 1) * hopLatencyUs(in), B / bwBytesPerUs};  // pipelined chain
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
  // children and B from its parent. The bytes stay 3B at the slower link:
  // on 3 + 1 only B crosses the network, but priced so the pipeline model
  // (each piece a hand-off at the network's latency) sends 128 KB-2 MB as
  // one piece, 1.16-1.28x behind the double tree in weft-sim.
  const double lat = multiHost(in) ? binaryTreeDepthUs(in) : log2ceil(in.nranks) * in.intra.latencyUs;
  return {2 * lat, 3 * B / linkBytesPerUs(in)};
}

CostTerms doubleTreeCost(Coll, const CostInputs& in, double B) {
  // Half the data per tree: interior in one (2 x B/2 up + B/2 down), a leaf
  // in the other (B/2 down): 2B in, like a ring's 2(n-1)/n B. Inside a host
  // the trees are chains (buildDoubleTree), so one host pays the chain's
  // depth, not log2(n), and each level over hosts an intra hop more.
  // Across hosts the busiest host's NICs pace it (treeNetScale: a slow host
  // carries less than 2B where the trees make it a leaf), the ranks' own
  // links inside.
  const double W = multiHost(in) ? 1e3 * std::min(in.inter.bandwidthGBs * std::max(in.treeNetScale, 1e-9),
                                                   in.intra.bandwidthGBs)
                                 : linkBytesPerUs(in);
  return {2 * doubleTreeLatencyUs(in), 2 * B / W};
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
  doubleTree.pipelinesPerChannel = 2;  // each channel's slice split in two halves, one per tree
  return {ring, binaryTree, doubleTree, hierAlgoInfo(), oneShotAlgo(), hierTreeAlgoInfo(),
          recursiveDoublingAlgo()};
}

}  // namespace weft::algo
