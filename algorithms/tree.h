// Tree AllReduce as a plan builder: reduce up a tree, broadcast back down.
//
// The tree is data (a parent per rank), so topology can shape it. Each tree
// runs as two concurrent channels per slice: "up" (children -> parent,
// reducing) and "down" (parent -> children, copying); the root's one fused
// step reduces and starts the broadcast. Up and down never wait on each
// other, so no FIFO size can make them deadlock, and pieces pipeline both
// ways at once.
#pragma once

#include <vector>

#include "algorithms/coll_args.h"
#include "algorithms/partition.h"
#include "algorithms/plan.h"

namespace weft::algo {

// One rank's place in a tree.
struct TreeLinks {
  int parent = -1;            // -1: the root
  std::vector<int> children;  // at most two (a step receives from two peers)
};

// Checks parent[] (one root, no cycle, every rank reaches the root, at most
// two children each) and returns `rank`'s links; throws weftInvalidArgument.
TreeLinks treeLinks(const std::vector<int>& parent, int rank);

// NCCL-style binary tree over n ranks: rank 0 the root, odd ranks leaves.
std::vector<int> binaryTreeParents(int n);

// Appends the channels of one tree AllReduce over `slice` of the buffer.
void appendTreeAllReduce(plan::Plan& p, const TreeLinks& me, Range slice, uint8_t conn);

// AllReduce over the tree parent[] (parent[r] = -1 for the root); empty
// parent = binaryTreeParents(n). Channels split the buffer; conn = channel.
plan::Plan buildTree(const CollArgs& a, const std::vector<int>& parent = {});

}  // namespace weft::algo
