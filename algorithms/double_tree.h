// Double binary tree AllReduce: two complementary trees, each carrying half
// of the data, so that every link carries about what a ring would while the
// depth stays logarithmic.
//
// The trees span hosts; inside a host the ranks form a chain. Tree 0 is the
// binary tree over hosts (host 0 the root, odd hosts leaves); tree 1 mirrors
// it (even host count) or shifts it by one (odd count), which makes every
// host interior in at most one tree (for an odd count, host 0 excepted). The host's parent
// attaches to the head of its chain; its first child host hangs off the
// head, the second off the next rank of the chain, so no rank has more than
// two children. Tree 1 runs the chain in reverse from its middle rank (its
// head half a host away from tree 0's), so a host's network traffic is
// spread over ranks on different NICs.
#pragma once

#include <array>
#include <vector>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft::algo {

// Parent arrays (per rank, -1 = root) of the two trees; hostOf[rank] is any
// host id, ranks with equal ids share a host. `order` (a permutation of the
// ranks, the topology's ring order; empty = rank order) orders the hosts
// (by first appearance) and each host's chain.
std::array<std::vector<int>, 2> doubleTreeParents(const std::vector<int>& hostOf,
                                                  const std::vector<int>& order = {});

// The second tree over n nodes, complementary to binaryTreeParents(n).
std::vector<int> mirrorTreeParents(int n);

// How much faster than 2B at the slowest host's NIC bandwidth the double
// tree's busiest host moves its share of a B-byte AllReduce (the cost
// model's CostInputs::treeNetScale). hostNicBw: per host in tree order
// (the ring's host order), the bandwidth of its NICs (any unit; <= 0:
// unknown). A host sends and receives B/2 per tree for its parent and for
// each child: 2B for a host interior in one tree and a leaf in the other,
// B for a leaf in both or a root with one child. On even hosts that is 1
// (some host carries 2B; with 2 hosts every host carries B: 2); with one
// slow host it says whether that host is a busy one.
double doubleTreeNetScale(const std::vector<double>& hostNicBw);

// AllReduce: each channel's slice split in two halves, the first on tree 0
// (conn c), the second on tree 1 (conn k + c on k channels). The trees follow a.hostOf
// (empty: one rank per host) and the channel's ring order (ringOrder(a, c)).
plan::Plan buildDoubleTree(const CollArgs& a);

}  // namespace weft::algo
