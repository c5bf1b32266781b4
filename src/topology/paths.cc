#include "src/topology/paths.h"

#include <algorithm>
#include <limits>

#include "src/util/error.h"

namespace weft::topo {

const char* toString(PathType t) {
  static const char* const names[] = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "NET", "DIS"};
  return names[static_cast<int>(t)];
}

namespace {

PathType classify(const System& sys, const Path& p) {
  bool net = false, smp = false, cpu = false, pci = false;
  int switches = 0;
  for (const Hop& h : p.hops) {
    switch (sys.links[h.link].kind) {
      case LinkKind::Net: net = true; break;
      case LinkKind::Smp: smp = true; break;
      case LinkKind::Pci:
      case LinkKind::Loc: pci = true; break;
      case LinkKind::NvLink: break;
    }
  }
  for (size_t i = 1; i + 1 < p.nodes.size(); ++i) {
    NodeKind k = sys.nodes[p.nodes[i]].kind;
    if (k == NodeKind::Cpu) cpu = true;
    if (k == NodeKind::PciSwitch) ++switches;
  }
  // An endpoint that is itself a CPU makes the path go through its host bridge.
  if (sys.nodes[p.nodes.front()].kind == NodeKind::Cpu || sys.nodes[p.nodes.back()].kind == NodeKind::Cpu) cpu = true;
  if (net) return PathType::Net;
  if (smp) return PathType::Sys;
  if (cpu) return PathType::Phb;
  if (switches > 1) return PathType::Pxb;
  if (pci) return PathType::Pix;
  return PathType::Nvl;
}

}  // namespace

Path findPath(const System& sys, int from, int to) {
  Path path;
  if (from == to) {
    path.type = PathType::Loc;
    path.bw = kLocalBw;
    path.nodes = {from};
    return path;
  }
  const int n = static_cast<int>(sys.nodes.size());
  bool sameHost = sys.nodes[from].host >= 0 && sys.nodes[from].host == sys.nodes[to].host;

  // Adjacency once per search: systems are small (hundreds of nodes).
  std::vector<std::vector<int>> adj(n);
  for (size_t i = 0; i < sys.links.size(); ++i) {
    adj[sys.links[i].a].push_back(static_cast<int>(i));
    adj[sys.links[i].b].push_back(static_cast<int>(i));
  }

  // Dijkstra on (bottleneck bandwidth desc, hops asc): the label only worsens
  // along a path, so settling the best label first is exact.
  std::vector<double> bw(n, -1);
  std::vector<int> hops(n, std::numeric_limits<int>::max());
  std::vector<int> via(n, -1);
  std::vector<bool> done(n, false);
  bw[from] = std::numeric_limits<double>::infinity();
  hops[from] = 0;
  while (true) {
    int u = -1;
    for (int i = 0; i < n; ++i)
      if (!done[i] && bw[i] >= 0 && (u < 0 || bw[i] > bw[u] || (bw[i] == bw[u] && hops[i] < hops[u]))) u = i;
    if (u < 0 || u == to) break;
    done[u] = true;
    if (u != from && sys.nodes[u].kind == NodeKind::Gpu) continue;  // no routing through GPUs
    for (int li : adj[u]) {
      const Link& l = sys.links[li];
      int v = l.a == u ? l.b : l.a;
      if (done[v]) continue;
      if (sameHost && sys.nodes[v].host != sys.nodes[from].host) continue;
      double nb = std::min(bw[u], l.bw);
      int nh = hops[u] + 1;
      if (nb > bw[v] || (nb == bw[v] && nh < hops[v])) {
        bw[v] = nb;
        hops[v] = nh;
        via[v] = li;
      }
    }
  }
  if (bw[to] < 0) return path;  // DIS

  for (int v = to; v != from;) {
    const Link& l = sys.links[via[v]];
    int u = l.a == v ? l.b : l.a;
    path.hops.push_back({via[v], l.a == u});
    path.nodes.push_back(v);
    path.latencyUs += latencyUs(l.latency);
    v = u;
  }
  path.nodes.push_back(from);
  std::reverse(path.hops.begin(), path.hops.end());
  std::reverse(path.nodes.begin(), path.nodes.end());
  path.bw = bw[to];
  path.type = classify(sys, path);
  return path;
}

PathTable::PathTable(const System& sys, const std::vector<int>& nodes) : nodes_(nodes) {
  std::sort(nodes_.begin(), nodes_.end());
  nodes_.erase(std::unique(nodes_.begin(), nodes_.end()), nodes_.end());
  paths_.reserve(nodes_.size() * nodes_.size());
  for (int a : nodes_)
    for (int b : nodes_) paths_.push_back(findPath(sys, a, b));
}

int PathTable::index(int node) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) raise(weftInternalError, "topology: node %d not in path table", node);
  return static_cast<int>(it - nodes_.begin());
}

const Path& PathTable::get(int from, int to) const {
  return paths_[index(from) * nodes_.size() + index(to)];
}

std::optional<PathType> gpuNicPath(const System& sys, int host, int cudaDev, const std::string& ibDevice, int port) {
  int gpu = -1, nic = -1;
  for (int g : sys.nodesOf(NodeKind::Gpu, host))
    if (sys.nodes[g].cudaDev == cudaDev) gpu = g;
  for (int n : sys.nodesOf(NodeKind::Nic, host))
    if (sys.nodes[n].ibDevice == ibDevice && sys.nodes[n].port == port) nic = n;
  if (gpu < 0 || nic < 0) return std::nullopt;
  const Path p = findPath(sys, gpu, nic);
  if (p.type == PathType::Dis) return std::nullopt;
  return p.type;
}

}  // namespace weft::topo
