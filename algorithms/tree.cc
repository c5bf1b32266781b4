#include "algorithms/tree.h"

#include <algorithm>

#include "src/util/error.h"

namespace weft::algo {

using plan::Buf;
using plan::kPostOp;
using plan::kPreOp;
using plan::Plan;
using plan::Step;

TreeLinks treeLinks(const std::vector<int>& parent, int rank) {
  const int n = int(parent.size());
  if (rank < 0 || rank >= n) raise(weftInvalidArgument, "tree: rank %d not in a tree of %d", rank, n);
  int roots = 0;
  std::vector<int> nChildren(n, 0);
  for (int r = 0; r < n; r++) {
    int p = parent[r];
    if (p == -1) {
      roots++;
      continue;
    }
    if (p < 0 || p >= n || p == r) raise(weftInvalidArgument, "tree: rank %d has parent %d", r, p);
    if (++nChildren[p] > 2) raise(weftInvalidArgument, "tree: rank %d has more than two children", p);
  }
  if (roots != 1) raise(weftInvalidArgument, "tree: %d roots", roots);
  // Every rank must reach the root within n hops; otherwise there is a cycle.
  for (int r = 0; r < n; r++) {
    int x = r, hops = 0;
    while (parent[x] != -1 && hops <= n) x = parent[x], hops++;
    if (hops > n) raise(weftInvalidArgument, "tree: rank %d is on a cycle", r);
  }
  TreeLinks me;
  me.parent = parent[rank];
  for (int r = 0; r < n; r++)
    if (parent[r] == rank) me.children.push_back(r);
  return me;
}

std::vector<int> binaryTreeParents(int n) {
  std::vector<int> parent(std::max(n, 0), -1);
  for (int r = 1; r < n; r++) {
    int low = r & -r;  // the rank's level in the tree
    int up = (r ^ low) | (low << 1);
    parent[r] = up < n ? up : (r ^ low);
  }
  return parent;
}

void appendTreeAllReduce(Plan& p, const TreeLinks& me, Range s, uint8_t conn) {
  if (s.count == 0) return;
  const int nc = int(me.children.size());
  Step up;  // ((child0 OP child1) OP pre(local)) -> parent, or at the root -> Recv and children
  up.nRecv = uint8_t(nc);
  for (int i = 0; i < nc; i++) up.recvPeer[i] = me.children[i];
  up.src = Buf::Send;
  up.srcOff = s.off;
  up.count = s.count;
  up.flags = kPreOp;
  up.conn = conn;
  if (me.parent >= 0) {
    up.nSend = 1;
    up.sendPeer[0] = me.parent;
  } else {
    up.flags |= kPostOp;
    up.dst = Buf::Recv;
    up.dstOff = s.off;
    up.nSend = uint8_t(nc);
    for (int i = 0; i < nc; i++) up.sendPeer[i] = me.children[i];
  }
  p.channels.push_back({{up}});
  if (me.parent < 0) return;

  Step down = plan::recv(me.parent, Buf::Recv, s.off, s.count, conn);
  down.nSend = uint8_t(nc);
  for (int i = 0; i < nc; i++) down.sendPeer[i] = me.children[i];
  p.channels.push_back({{down}});
}

Plan buildTree(const CollArgs& a, const std::vector<int>& parentIn) {
  validateArgs(a);
  if (a.coll != plan::Coll::AllReduce) raise(weftInvalidArgument, "tree: %s is not implemented", plan::collName(a.coll));
  std::vector<int> parent = parentIn.empty() ? binaryTreeParents(a.nranks) : parentIn;
  if (int(parent.size()) != a.nranks)
    raise(weftInvalidArgument, "tree: %zu parents for %d ranks", parent.size(), a.nranks);
  Plan p = emptyPlan(a);
  if (a.count == 0) return p;
  TreeLinks me = treeLinks(parent, a.rank);
  const int nch = usableChannels(a);
  for (int c = 0; c < nch; c++) appendTreeAllReduce(p, me, channelPart(a, nch, c), uint8_t(c));
  return p;
}

}  // namespace weft::algo
