#include "src/topology/graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "src/util/error.h"

namespace weft::topo {

double pcieBw(int gen, int width) {
  if (gen <= 0 || width <= 0) return kPcieGen3x16Bw;
  return 0.75 * std::ldexp(1.0, gen - 3) * width;
}

double nvlinkBwPerLink(int sm) {
  // Per-link, per-direction GB/s by generation: NVLink 3 (A100), 4 (H100),
  // 5 (B200). Older GPUs get NVLink 2's value.
  if (sm >= 100) return 40.0;
  if (sm >= 90) return 20.6;
  if (sm >= 80) return 20.0;
  return 18.0;
}

double latencyUs(LatencyClass c) {
  switch (c) {
    case LatencyClass::Local: return 0.05;
    case LatencyClass::NvLink: return 0.6;
    case LatencyClass::Pcie: return 1.0;
    case LatencyClass::Smp: return 1.5;
    case LatencyClass::Network: return 5.0;
  }
  return 5.0;
}

LatencyClass defaultLatency(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink: return LatencyClass::NvLink;
    case LinkKind::Pci: return LatencyClass::Pcie;
    case LinkKind::Smp: return LatencyClass::Smp;
    case LinkKind::Net: return LatencyClass::Network;
    case LinkKind::Loc: return LatencyClass::Local;
  }
  return LatencyClass::Network;
}

namespace {

template <typename E, size_t N>
E parseName(std::string_view s, const std::pair<E, const char*> (&table)[N], const char* what) {
  for (const auto& [e, name] : table)
    if (s == name) return e;
  raise(weftInvalidArgument, "topology: unknown %s '%.*s'", what, static_cast<int>(s.size()), s.data());
}

template <typename E, size_t N>
const char* nameOf(E e, const std::pair<E, const char*> (&table)[N]) {
  for (const auto& [v, name] : table)
    if (v == e) return name;
  return "?";
}

const std::pair<NodeKind, const char*> kNodeKinds[] = {
    {NodeKind::Cpu, "cpu"},         {NodeKind::Gpu, "gpu"},           {NodeKind::Nic, "nic"},
    {NodeKind::PciSwitch, "pci_switch"}, {NodeKind::NvSwitch, "nvswitch"}, {NodeKind::NetSwitch, "net_switch"}};
const std::pair<LinkKind, const char*> kLinkKinds[] = {{LinkKind::NvLink, "nvlink"},
                                                       {LinkKind::Pci, "pci"},
                                                       {LinkKind::Smp, "smp"},
                                                       {LinkKind::Net, "net"},
                                                       {LinkKind::Loc, "loc"}};
const std::pair<LatencyClass, const char*> kLatencies[] = {{LatencyClass::Local, "local"},
                                                           {LatencyClass::NvLink, "nvlink"},
                                                           {LatencyClass::Pcie, "pcie"},
                                                           {LatencyClass::Smp, "smp"},
                                                           {LatencyClass::Network, "network"}};

}  // namespace

const char* toString(NodeKind k) { return nameOf(k, kNodeKinds); }
const char* toString(LinkKind k) { return nameOf(k, kLinkKinds); }
const char* toString(LatencyClass c) { return nameOf(c, kLatencies); }
NodeKind nodeKindFromString(std::string_view s) { return parseName(s, kNodeKinds, "node kind"); }
LinkKind linkKindFromString(std::string_view s) { return parseName(s, kLinkKinds, "link kind"); }
LatencyClass latencyFromString(std::string_view s) { return parseName(s, kLatencies, "latency class"); }

int System::addHost(std::string name) {
  hosts.push_back(std::move(name));
  return static_cast<int>(hosts.size()) - 1;
}

int System::addNode(Node n) {
  if (n.host >= static_cast<int>(hosts.size()) || n.host < -1)
    raise(weftInvalidArgument, "topology: node '%s' names host %d of %zu", n.id.c_str(), n.host, hosts.size());
  if (n.id.empty()) raise(weftInvalidArgument, "topology: a node has no id");
  if (find(n.host, n.id) >= 0) raise(weftInvalidArgument, "topology: duplicate node '%s'", n.id.c_str());
  if ((n.kind == NodeKind::NetSwitch) != (n.host == -1))
    raise(weftInvalidArgument, "topology: node '%s': network switches, and only they, live outside hosts",
          n.id.c_str());
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

int System::addLink(int a, int b, LinkKind kind, double bw, int count) {
  int n = static_cast<int>(nodes.size());
  if (a < 0 || b < 0 || a >= n || b >= n || a == b) raise(weftInvalidArgument, "topology: bad link %d-%d", a, b);
  if (!(bw > 0)) raise(weftInvalidArgument, "topology: link %s-%s has no bandwidth", key(a).c_str(), key(b).c_str());
  Link l;
  l.a = a;
  l.b = b;
  l.kind = kind;
  l.bw = bw;
  l.latency = defaultLatency(kind);
  l.count = count;
  links.push_back(l);
  return static_cast<int>(links.size()) - 1;
}

int System::find(int host, std::string_view id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].host == host && nodes[i].id == id) return static_cast<int>(i);
  return -1;
}

std::string System::key(int node) const {
  const Node& n = nodes.at(node);
  return (n.host < 0 ? std::string("net") : hosts.at(n.host)) + "/" + n.id;
}

std::vector<int> System::linksOf(int node) const {
  std::vector<int> out;
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i].a == node || links[i].b == node) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> System::nodesOf(NodeKind kind, int host) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == kind && nodes[i].host == host) out.push_back(static_cast<int>(i));
  return out;
}

int System::merge(const System& other) {
  int hostBase = static_cast<int>(hosts.size());
  for (const auto& h : other.hosts) hosts.push_back(h);
  std::vector<int> map(other.nodes.size());
  for (size_t i = 0; i < other.nodes.size(); ++i) {
    Node n = other.nodes[i];
    if (n.host >= 0) {
      n.host += hostBase;
    } else if (int existing = find(-1, n.id); existing >= 0) {
      map[i] = existing;
      continue;
    }
    map[i] = addNode(std::move(n));
  }
  for (Link l : other.links) {
    l.a = map[l.a];
    l.b = map[l.b];
    links.push_back(l);
  }
  return hostBase;
}

namespace {

// A link named by its endpoints' keys, smaller key first, so that two
// systems that list the same links in another order compare equal.
using LinkKey = std::tuple<std::string, std::string, int, double, int, int, int, int>;

std::vector<LinkKey> canonicalLinks(const System& s) {
  std::vector<LinkKey> out;
  for (const Link& l : s.links) {
    std::string ka = s.key(l.a), kb = s.key(l.b);
    if (kb < ka) std::swap(ka, kb);
    out.emplace_back(ka, kb, static_cast<int>(l.kind), l.bw, static_cast<int>(l.latency), l.count, l.pciGen,
                     l.pciWidth);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, const Node*> canonicalNodes(const System& s) {
  std::map<std::string, const Node*> out;
  for (size_t i = 0; i < s.nodes.size(); ++i) out[s.key(static_cast<int>(i))] = &s.nodes[i];
  return out;
}

}  // namespace

bool operator==(const System& x, const System& y) {
  if (x.hosts != y.hosts || x.nodes.size() != y.nodes.size() || x.links.size() != y.links.size()) return false;
  auto nx = canonicalNodes(x), ny = canonicalNodes(y);
  if (nx.size() != ny.size()) return false;
  for (auto ix = nx.begin(), iy = ny.begin(); ix != nx.end(); ++ix, ++iy) {
    if (ix->first != iy->first) return false;
    // Host indices may differ only if host names repeat, which keys hide;
    // hosts were compared above, so compare the rest of the node.
    if (!(*ix->second == *iy->second)) return false;
  }
  return canonicalLinks(x) == canonicalLinks(y);
}

}  // namespace weft::topo
