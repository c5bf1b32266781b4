#include "algorithms/double_tree.h"

#include <algorithm>
#include <map>

#include "algorithms/partition.h"
#include "algorithms/tree.h"
#include "src/util/error.h"

namespace weft::algo {

std::vector<int> mirrorTreeParents(int n) {
  std::vector<int> base = binaryTreeParents(n);
  std::vector<int> parent(std::max(n, 0), -1);
  if (n <= 1) return parent;
  // Even n: mirror (x -> n-1-x) turns the odd leaves into even interior
  // nodes. Odd n: mirroring would map leaves to leaves; shift by one instead.
  auto map = [&](int x) { return n % 2 == 0 ? n - 1 - x : (x + 1) % n; };
  auto unmap = [&](int x) { return n % 2 == 0 ? n - 1 - x : (x - 1 + n) % n; };
  for (int r = 0; r < n; r++) {
    int p = base[unmap(r)];
    parent[r] = p < 0 ? -1 : map(p);
  }
  return parent;
}

double doubleTreeNetScale(const std::vector<double>& hostNicBw) {
  const int hosts = int(hostNicBw.size());
  if (hosts < 2) return 1;
  double slowest = hostNicBw[0];
  for (double bw : hostNicBw) {
    if (!(bw > 0)) return 1;
    slowest = std::min(slowest, bw);
  }
  // Per host, the halves it sends (and receives) in both trees: one per
  // child and one for its parent.
  std::vector<int> halves(size_t(hosts), 0);
  for (const std::vector<int>& parent : {binaryTreeParents(hosts), mirrorTreeParents(hosts)})
    for (int h = 0; h < hosts; h++)
      if (parent[size_t(h)] >= 0) halves[size_t(h)]++, halves[size_t(parent[size_t(h)])]++;
  double worst = 0;  // time per byte of B at the busiest host, in 1 / bandwidth units
  for (int h = 0; h < hosts; h++) worst = std::max(worst, 0.5 * halves[size_t(h)] / hostNicBw[size_t(h)]);
  return worst > 0 ? (2.0 / slowest) / worst : 1;
}

std::array<std::vector<int>, 2> doubleTreeParents(const std::vector<int>& hostOf, const std::vector<int>& order) {
  const int n = int(hostOf.size());
  if (!order.empty() && int(order.size()) != n)
    raise(weftInvalidArgument, "double tree: an order of %zu ranks for %d", order.size(), n);
  // Hosts numbered by first appearance in the order; members in its order.
  std::map<int, int> hostIndex;
  std::vector<std::vector<int>> members;
  for (int i = 0; i < n; i++) {
    const int r = order.empty() ? i : order[size_t(i)];
    auto [it, fresh] = hostIndex.emplace(hostOf[r], int(members.size()));
    if (fresh) members.emplace_back();
    members[it->second].push_back(r);
  }
  const int nHosts = int(members.size());
  std::array<std::vector<int>, 2> hostParent = {binaryTreeParents(nHosts), mirrorTreeParents(nHosts)};
  std::array<std::vector<int>, 2> parent;
  // Tree 1 runs each host's chain backwards from its middle (m[L/2],
  // m[L/2 - 1], ..., m[0], m[L-1], ..., m[L/2 + 1]), so its head, which
  // carries the host's network traffic, sits half a host away from tree 0's
  // head m[0]. Its reverse from the end (head m[L-1]) shared tree 0's NIC:
  // a ring order's chain enters and leaves a host at the ranks nearest its
  // NIC, and the IB transport gives local rank l's connection k NIC
  // (l + k) mod K, so with one channel on 8 rails m[7]'s connection 1 and
  // m[0]'s connection 0 both leave through NIC 0 (docs/simulator.md).
  // Linear in the ranks: a plan builder calls this for its one rank, and
  // the simulator for every rank.
  for (int t = 0; t < 2; t++) {
    parent[t].assign(n, -1);
    auto member = [&](int h, size_t k) {
      const std::vector<int>& m = members[size_t(h)];
      return t == 1 ? m[(m.size() / 2 + m.size() - k) % m.size()] : m[k];
    };
    std::vector<int> childrenSeen(size_t(nHosts), 0);  // children in host order
    for (int h = 0; h < nHosts; h++) {
      const size_t len = members[size_t(h)].size();
      for (size_t k = 1; k < len; k++) parent[t][member(h, k)] = member(h, k - 1);
      const int ph = hostParent[t][h];
      if (ph < 0) continue;
      // h is child number idx of its parent host; it hangs off that chain's idx-th rank (or its last).
      const size_t idx = size_t(childrenSeen[size_t(ph)]++);
      parent[t][member(h, 0)] = member(ph, std::min(idx, members[size_t(ph)].size() - 1));
    }
  }
  return parent;
}

plan::Plan buildDoubleTree(const CollArgs& a) {
  validateArgs(a);
  if (a.coll != plan::Coll::AllReduce)
    raise(weftInvalidArgument, "double tree: %s is not implemented", plan::collName(a.coll));
  std::vector<int> hostOf = a.hostOf;
  if (hostOf.empty())
    for (int r = 0; r < a.nranks; r++) hostOf.push_back(r);
  if (int(hostOf.size()) != a.nranks)
    raise(weftInvalidArgument, "double tree: %zu host ids for %d ranks", hostOf.size(), a.nranks);
  plan::Plan p = emptyPlan(a);
  if (a.count == 0) return p;
  const int nch = usableChannels(a);
  for (int c = 0; c < nch; c++) {
    // Each channel's trees follow its ring order (the topology's, NIC by
    // NIC), as its ring would.
    auto parents = doubleTreeParents(hostOf, ringOrder(a, c));
    const TreeLinks me[2] = {treeLinks(parents[0], a.rank), treeLinks(parents[1], a.rank)};
    Range s = channelPart(a, nch, c);
    Range half0 = alignedPart(s.count, 2, 0, splitUnit(a));
    half0.off += s.off;
    Range half1{s.off + half0.count, s.count - half0.count};
    // Connections: the first tree's channels 0..nch-1, the second's after
    // them. A transport spreads connections over a rank's NICs by index
    // modulo their count (ib::nicForChannel), and a rank is interior in one
    // tree (3 halves out per channel) and a leaf in the other (one): with
    // 2c and 2c + 1, connections 2c and 2c + K of one tree shared a NIC
    // whenever 2 nch > K NICs, and half the NICs carried three quarters of
    // the bytes (the 64 x 8 cluster on 8 channels: 24 GB/s busbw where the
    // ring reached 40; docs/simulator.md).
    appendTreeAllReduce(p, me[0], half0, uint8_t(c));
    appendTreeAllReduce(p, me[1], half1, uint8_t(nch + c));
  }
  return p;
}

}  // namespace weft::algo
