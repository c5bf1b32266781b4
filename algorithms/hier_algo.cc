// The hierarchical algorithm's registry entry and cost terms (docs/tuning.md).
#include <algorithm>
#include <cmath>

#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"

namespace weft::algo {
namespace {

using plan::Coll;

// The hosts as the hierarchical algorithms see them: L rails (the largest
// host's ranks), and on the smallest host (lmin ranks) each rank holds k =
// ceil(L/lmin) rails, whose rings it runs one after another over
// R = min(NICs, lmin) NICs. Even hosts: lmin = L, k = 1.
struct HostShape {
  int H, L, lmin, k, R;
};

HostShape hostShape(const CostInputs& in) {
  const int n = std::max(in.nranks, 1);
  HostShape s;
  s.H = std::clamp(in.nHosts, 1, n);
  s.L = in.hostRanksMax > 0 ? std::min(in.hostRanksMax, n) : (n + s.H - 1) / s.H;
  s.lmin = in.hostRanksMin > 0 ? std::clamp(in.hostRanksMin, 1, s.L) : s.L;
  s.k = (s.L + s.lmin - 1) / s.lmin;
  s.R = std::clamp(in.nicsPerHost, 1, s.lmin);
  return s;
}

// A rank of the smallest host holding k rails: its first rail's step ends
// when the data of all k arrived (they share its NICs fairly), and the
// other k-1 rails' sends follow one after another: (2k-1)/k of the
// network time that even hosts take.
double serialRails(const HostShape& s) { return (2.0 * s.k - 1) / s.k; }

// The share of B that the busiest host's NICs carry per phase. AllReduce:
// every host holds every rail's whole data, (H-1)/H of it crosses its NICs,
// and the smallest host's ranks run their rails one after another
// (serialRails). ReduceScatter and AllGather move each rank's block once
// between hosts: a host of l ranks sends its partial sums of the other
// hosts' blocks, or receives their blocks, (n - l)/n of B; the smallest
// host is the busiest, with (H-1)/H on even hosts (weft-sim, 4 + 2
// ReduceScatter at 8 MB: 520 us simulated, 523 this way; 579 with the even
// share run rail after rail).
double hostNetShare(Coll c, const HostShape& s, int nranks) {
  const double even = double(s.H - 1) / s.H;
  if (c == Coll::AllReduce) return even * serialRails(s);
  const double n = std::max(nranks, 1);
  return std::max(even, (n - s.lmin) / n);
}

// Per level: (L-1) hops of the host ring at shared-memory pace and (H-1) hops
// of a rail ring at the network's (k times over: the rails of a rank of the
// smallest host run in sequence), once per phase (AllReduce has two of
// each). The network carries (H-1)/H of the bytes per phase and host,
// spread over the smallest host's NICs.
CostTerms hierCost(Coll c, const CostInputs& in, double B) {
  HostShape s = hostShape(in);
  // An all-gather's rail steps forward blocks the rank already has, so its
  // rails' sends leave together; only reducing steps wait on their input
  // (weft-sim, 3 + 1 ranks: ReduceScatter 1.75x the even network time,
  // AllGather 1.5x).
  if (c == Coll::AllGather) s.k = 1;
  const double phases = c == Coll::AllReduce ? 2.0 : 1.0;
  const double lat = phases * ((s.L - 1) * in.intra.latencyUs + (s.H - 1) * s.k * in.inter.latencyUs);
  double bytes = 0;
  if (s.L > 1) bytes += phases * (s.L - 1) / s.L * B / (1e3 * in.intra.bandwidthGBs);
  if (s.H > 1) bytes += phases * hostNetShare(c, s, in.nranks) * B / (1e3 * in.inter.bandwidthGBs * s.R);
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
// spread over the smallest host's NICs; uneven hosts as in hierCost.
CostTerms hierTreeCost(Coll, const CostInputs& in, double B) {
  const HostShape s = hostShape(in);
  const double depth = s.H > 1 ? std::ceil(std::log2(double(s.H))) : 0.0;
  const double lat = 2 * ((s.L - 1) * in.intra.latencyUs + depth * s.k * in.inter.latencyUs);
  double bytes = 0;
  if (s.L > 1) bytes += 2.0 * (s.L - 1) / s.L * B / (1e3 * in.intra.bandwidthGBs);
  if (s.H > 1) bytes += 3.0 * B / (1e3 * in.inter.bandwidthGBs * s.R) * serialRails(s);
  return {lat, bytes};
}

// The rail trees carry what the host's reduce-scatter left each local rank:
// 1/L of the data.
double hierTreePipelineShare(Coll, const CostInputs& in) { return 1.0 / double(hostShape(in).L); }

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
