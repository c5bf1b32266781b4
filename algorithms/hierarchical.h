// Hierarchical (2-D) collectives: inside each host the ranks form a ring;
// across hosts, the ranks that hold the same share of the data (one "rail"
// per share: the ranks of equal local index, each on its own NIC where the
// host has one per GPU) form one ring per rail.
//
//   AllReduce:     reduce-scatter inside the host -> AllReduce per rail
//                  across hosts -> all-gather inside the host
//   ReduceScatter: reduce-scatter inside the host (each rank collects the
//                  host's partial sums of its rail's blocks) -> reduce-
//                  scatter per rail across hosts
//   AllGather:     all-gather per rail across hosts -> all-gather inside
//                  the host
//
// The network carries 2(H-1)/H of the data per host (H hosts), spread over
// the host's rails, instead of the flat ring's 2(n-1)/n through one link,
// and a call waits on 2(L-1) local hops plus 2(H-1) network hops instead of
// 2(n-1) network hops (L ranks per host).
//
// Hosts and the order inside them follow the channel's ring order
// (topology order: host-contiguous, NIC-aware); a host's local index i is
// the rank's position in its host's stretch of that ring.
//
// Uneven hosts: there are Lmax rails (the largest host's rank count). On a
// host with L < Lmax ranks, local rank j also stands in for the rails
// j + L, j + 2L, ... (rail i is held by local rank i mod L), so every host
// takes part in every rail and a host with fewer ranks sends more through
// each of them. A rank holding several rails runs their rings in rail
// order, which keeps any two rings that share ranks from waiting on each
// other in a cycle.
#pragma once

#include <vector>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft::algo {

// The hosts of one channel: hosts in order of first appearance in the
// channel's ring order, each host's ranks in ring order.
struct HostLayout {
  std::vector<std::vector<int>> hosts;
  int myHost = 0;
  int myLocal = 0;
  int maxLocal = 1;  // Lmax: ranks on the largest host = number of rails

  int localCount(int host) const { return int(hosts[size_t(host)].size()); }
  // The local index of the rank that holds `rail` on `host`.
  int railHolder(int host, int rail) const { return rail % localCount(host); }
};

// a.hostOf (empty: one rank per host) grouped along ringOrder(a, channel).
HostLayout hostLayout(const CollArgs& a, int channel);

// AllReduce, ReduceScatter, AllGather; one channel per part of the data
// (conn = channel), each running its phases in sequence.
bool hierSupports(plan::Coll c);
plan::Plan buildHierarchical(const CollArgs& a);
// AllReduce only: the same, with a binary tree per rail across hosts
// instead of a ring (2 log2(H) network hops instead of 2(H-1); the tree
// moves about twice the ring's bytes per rail, so it suits small messages
// on many hosts). Verified, not registered yet: on one host or one rank per
// host it degenerates into the ring or a plain tree, and the registry has
// no way yet to say "not applicable" for a layout, so its cost terms would
// win ties it should not.
plan::Plan buildHierarchicalTree(const CollArgs& a);

}  // namespace weft::algo
