#include "src/sim/topo_cluster.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "src/topology/comm_topo.h"
#include "src/topology/paths.h"
#include "src/topology/topo_file.h"
#include "transports/ib/nic_locality.h"
#include "src/util/error.h"

namespace weft::sim {
namespace {

using Json = nlohmann::json;

struct Degraded {
  std::string host;  // "*": every host
  double fraction = 1;
  double latUs = 0;
};

struct SimSection {
  std::vector<int> ranksPerHost;  // empty: GPUs per host; one entry: every host
  double stepUs = 0;
  double intraGBs = 0;  // 0: from the GPU's links
  double intraLatUs = -1, netHopLatUs = -1;  // < 0: the links' latency classes
  std::vector<Degraded> degraded;
};

double number(const Json& v, const std::string& field, double min, bool strict) {
  if (!v.is_number()) raise(weftInvalidArgument, "simulation.%s must be a number", field.c_str());
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < min || (strict && d == min))
    raise(weftInvalidArgument, "simulation.%s must be %s %g (is %g)", field.c_str(), strict ? "above" : "at least", min, d);
  return d;
}

int count(const Json& v, const std::string& field) {
  const double d = number(v, field, 1, false);
  if (d != std::floor(d) || d > 1e6) raise(weftInvalidArgument, "simulation.%s must be a whole number", field.c_str());
  return int(d);
}

Degraded parseDegraded(const Json& e, size_t i) {
  const std::string at = "degraded[" + std::to_string(i) + "]";
  if (!e.is_object()) raise(weftInvalidArgument, "simulation.%s must be an object", at.c_str());
  Degraded d;
  bool haveHost = false;
  for (const auto& [k, v] : e.items()) {
    if (k == "host") {
      if (!v.is_string()) raise(weftInvalidArgument, "simulation.%s.host must be a host name or \"*\"", at.c_str());
      d.host = v.get<std::string>();
      haveHost = true;
    } else if (k == "fraction") {
      d.fraction = number(v, at + ".fraction", 0, true);
      if (d.fraction > 1) raise(weftInvalidArgument, "simulation.%s.fraction must be at most 1", at.c_str());
    } else if (k == "latency_us") {
      d.latUs = number(v, at + ".latency_us", 0, false);
    } else {
      raise(weftInvalidArgument, "simulation.%s: unknown member '%s'", at.c_str(), k.c_str());
    }
  }
  if (!haveHost) raise(weftInvalidArgument, "simulation.%s needs a host", at.c_str());
  return d;
}

SimSection parseSection(const Json& s) {
  if (!s.is_object()) raise(weftInvalidArgument, "simulation must be an object");
  SimSection out;
  for (const auto& [k, v] : s.items()) {
    if (k == "ranks_per_host") {
      if (v.is_array()) {
        for (size_t i = 0; i < v.size(); i++) out.ranksPerHost.push_back(count(v[i], k + "[" + std::to_string(i) + "]"));
      } else {
        out.ranksPerHost.push_back(count(v, k));
      }
    } else if (k == "step_us") {
      out.stepUs = number(v, k, 0, false);
    } else if (k == "intra_gbs") {
      out.intraGBs = number(v, k, 0, true);
    } else if (k == "intra_latency_us") {
      out.intraLatUs = number(v, k, 0, false);
    } else if (k == "net_hop_latency_us") {
      out.netHopLatUs = number(v, k, 0, false);
    } else if (k == "degraded") {
      if (!v.is_array()) raise(weftInvalidArgument, "simulation.degraded must be an array");
      for (size_t i = 0; i < v.size(); i++) out.degraded.push_back(parseDegraded(v[i], i));
    } else if (k != "comment") {
      raise(weftInvalidArgument, "simulation: unknown member '%s'", k.c_str());
    }
  }
  return out;
}

class Builder {
 public:
  // hostKeys: per host, its description without its name (empty: none);
  // hosts described alike have the same distances to their NICs.
  Builder(const topo::System& sys, const SimSection& s, std::vector<std::string> hostKeys)
      : sys_(sys), s_(s), hostKeys_(std::move(hostKeys)) {}

  TopoCluster build() {
    const int hosts = int(sys_.hosts.size());
    if (hosts == 0) raise(weftInvalidArgument, "topology: the file describes no hosts");
    out_.hostNames = sys_.hosts;
    for (const auto& d : s_.degraded)
      if (d.host != "*" && std::find(sys_.hosts.begin(), sys_.hosts.end(), d.host) == sys_.hosts.end())
        raise(weftInvalidArgument, "simulation.degraded: no host named '%s'", d.host.c_str());
    layout();
    switches();
    for (int h = 0; h < hosts; h++) hostLinks(h);
    routes();
    summarize();
    out_.cluster.stepOverheadUs = s_.stepUs;
    validate(out_.cluster);
    if (noPlaces_) out_.places.clear();
    out_.hostKeys = hostKeys_;
    return std::move(out_);
  }

 private:
  void layout() {
    const size_t hosts = sys_.hosts.size();
    const auto& given = s_.ranksPerHost;
    if (given.size() > 1 && given.size() != hosts)
      raise(weftInvalidArgument, "simulation.ranks_per_host has %zu entries for %zu hosts", given.size(), hosts);
    for (size_t h = 0; h < hosts; h++) {
      const int gpus = int(sys_.nodesOf(topo::NodeKind::Gpu, int(h)).size());
      int n = given.empty() ? gpus : given[given.size() == 1 ? 0 : h];
      if (given.empty() && gpus == 0)
        raise(weftInvalidArgument, "simulation.ranks_per_host: host '%s' has no GPUs; say how many ranks it runs",
              sys_.hosts[h].c_str());
      if (gpus > 0 && n > gpus)
        raise(weftInvalidArgument, "simulation.ranks_per_host: %d ranks on host '%s', which has %d GPUs", n,
              sys_.hosts[h].c_str(), gpus);
      out_.layout.push_back(n);
    }
  }

  double netLat(const topo::Link& l) const { return s_.netHopLatUs >= 0 ? s_.netHopLatUs : topo::latencyUs(l.latency); }

  // Switch indices, and two directed links per switch-to-switch net link.
  void switches() {
    Cluster& c = out_.cluster;
    for (int node : sys_.nodesOf(topo::NodeKind::NetSwitch, -1)) switchOf_[node] = c.nSwitches++;
    adj_.resize(size_t(c.nSwitches));
    for (const auto& l : sys_.links) {
      if (l.kind != topo::LinkKind::Net || !switchOf_.count(l.a) || !switchOf_.count(l.b)) continue;
      const int a = switchOf_[l.a], b = switchOf_[l.b];
      const std::string name = sys_.key(l.a) + "->" + sys_.key(l.b);
      adj_[size_t(a)].push_back({b, c.addLink(l.bw, netLat(l), name)});
      adj_[size_t(b)].push_back({a, c.addLink(l.bw, netLat(l), sys_.key(l.b) + "->" + sys_.key(l.a))});
    }
  }

  const Degraded* degradedOf(int h) const {
    for (const auto& d : s_.degraded)
      if (d.host == "*" || d.host == sys_.hosts[size_t(h)]) return &d;
    return nullptr;
  }

  double rankLink(int gpu, double* latUs) const {
    double nv = 0, pci = 0;
    topo::LatencyClass cls = topo::LatencyClass::Pcie;
    for (int li : sys_.linksOf(gpu)) {
      const auto& l = sys_.links[size_t(li)];
      if (l.kind == topo::LinkKind::NvLink) nv += l.bw, cls = topo::LatencyClass::NvLink;
      else if (l.kind == topo::LinkKind::Pci) pci = std::max(pci, l.bw);
    }
    *latUs = s_.intraLatUs >= 0 ? s_.intraLatUs : topo::latencyUs(cls);
    return s_.intraGBs > 0 ? s_.intraGBs : nv > 0 ? nv : pci;
  }

  void hostLinks(int h);
  void hostVia(int h, const std::vector<int>& gpus);
  // Where the communicator would place the rank (its GPU, else a CPU node);
  // without a node to place it on, the cluster has no ring orders.
  void placeRank(int h, int gpu, int localIndex) {
    if (gpu >= 0) return out_.places.push_back({h, gpu});
    try {
      out_.places.push_back(topo::placeRank(sys_, h, -1, -1, localIndex));
    } catch (const Error&) {
      noPlaces_ = true;
    }
  }
  std::vector<ib::NicCandidate> rankPorts(int h, int gpu, const std::vector<int>& nicNodes);
  void routes();
  void summarize();

  const topo::System& sys_;
  const SimSection& s_;
  TopoCluster out_;
  std::map<int, int> switchOf_;  // node -> switch index
  std::vector<std::vector<std::pair<int, int>>> adj_;  // per switch: (neighbour, link)
  std::vector<std::vector<int>> hostNics_;             // per host: cluster NIC indices
  std::vector<std::string> hostKeys_;
  bool noPlaces_ = false;
  std::map<std::string, std::vector<std::optional<ib::PciDistance>>> distances_;  // per host key and GPU
};

ib::LinkLayer linkLayerOf(const std::string& s) {
  if (s == "InfiniBand") return ib::LinkLayer::InfiniBand;
  return s == "Ethernet" ? ib::LinkLayer::Ethernet : ib::LinkLayer::Unknown;
}

// A rank's view of its host's NICs, as the IB transport measures it
// (ib::nicDistances: the PCI path from the rank's GPU to each port). The
// paths are searched over the whole cluster's graph, so hosts described
// alike share the result (512 hosts x 8 GPUs x 8 NICs would take seconds).
std::vector<ib::NicCandidate> Builder::rankPorts(int h, int gpu, const std::vector<int>& nicNodes) {
  const int cudaDev = gpu >= 0 ? sys_.nodes[size_t(gpu)].cudaDev : -1;
  const std::string key = hostKeys_[size_t(h)].empty() ? "" : hostKeys_[size_t(h)] + "#" + std::to_string(cudaDev);
  auto it = key.empty() ? distances_.end() : distances_.find(key);
  if (it == distances_.end()) {
    std::vector<ib::PortState> states;
    for (int node : nicNodes) {
      ib::PortState p;
      p.dev = sys_.nodes[size_t(node)].ibDevice;
      p.port = sys_.nodes[size_t(node)].port;
      states.push_back(p);
    }
    it = distances_.emplace(key, ib::nicDistances(&sys_, h, cudaDev, -1, states).distance).first;
  }
  std::vector<ib::NicCandidate> ports;
  for (size_t i = 0; i < nicNodes.size(); i++) {
    const topo::Node& nic = sys_.nodes[size_t(nicNodes[i])];
    ports.push_back({sys_.key(nicNodes[i]), linkLayerOf(nic.linkLayer), int(nic.speedGbps * 1000), it->second[i]});
  }
  if (key.empty()) distances_.erase(it);
  return ports;
}

// The host's ranks (one per GPU, in the file's order) and its NICs that
// have a net link to a switch.
void Builder::hostLinks(int h) {
  Cluster& c = out_.cluster;
  const std::string& name = sys_.hosts[size_t(h)];
  const Degraded* d = degradedOf(h);
  std::vector<int> nics, nicNodes;
  for (int node : sys_.nodesOf(topo::NodeKind::Nic, h)) {
    for (int li : sys_.linksOf(node)) {
      const auto& l = sys_.links[size_t(li)];
      const int other = l.a == node ? l.b : l.a;
      if (l.kind != topo::LinkKind::Net || !switchOf_.count(other)) continue;
      const double bw = l.bw * (d ? d->fraction : 1), lat = netLat(l) + (d ? d->latUs : 0);
      nics.push_back(int(c.nicUp.size()));
      nicNodes.push_back(node);
      c.nicUp.push_back(c.addLink(bw, lat, sys_.key(node) + ".up"));
      c.nicDown.push_back(c.addLink(bw, 0, sys_.key(node) + ".down"));
      c.nicHost.push_back(h);
      c.nicSwitch.push_back(switchOf_[other]);
      break;
    }
  }
  if (nics.empty() && sys_.hosts.size() > 1)
    raise(weftInvalidArgument, "topology: host '%s' is disconnected: none of its NICs has a net link to a switch",
          name.c_str());
  hostNics_.push_back(nics);
  c.hostNics.push_back(nics);
  const auto gpus = sys_.nodesOf(topo::NodeKind::Gpu, h);
  for (int l = 0; l < out_.layout[size_t(h)]; l++) {
    const int r = int(c.hostOf.size());
    double lat = s_.intraLatUs >= 0 ? s_.intraLatUs : 1.0;
    const double bw = gpus.empty() ? s_.intraGBs : rankLink(gpus[size_t(l)], &lat);
    if (!(bw > 0))
      raise(weftInvalidArgument, "simulation.intra_gbs: host '%s' has no GPU links; give its ranks' shared-memory "
            "bandwidth", name.c_str());
    c.hostOf.push_back(h);
    c.rankOut.push_back(c.addLink(bw, lat, name + "/rank" + std::to_string(l) + ".out"));
    c.rankIn.push_back(c.addLink(bw, 0, name + "/rank" + std::to_string(l) + ".in"));
    c.addRankNics(l, rankPorts(h, gpus.empty() ? -1 : gpus[size_t(l)], nicNodes));
    placeRank(h, gpus.empty() ? -1 : gpus[size_t(l)], l);
    c.localOf.push_back(l);
  }
  hostVia(h, gpus);
}

// Between GPUs that are not peer-to-peer the bytes go through pinned host
// memory: the widest path's links between the two GPUs' own (the sockets'
// link, a PCI switch's uplink), one cluster link per direction of each,
// shared by every pair of the host that crosses it.
void Builder::hostVia(int h, const std::vector<int>& gpus) {
  Cluster& c = out_.cluster;
  const size_t L = size_t(out_.layout[size_t(h)]);
  c.hostVia.emplace_back();
  if (gpus.empty()) return;
  std::vector<std::vector<int>> pairs(L * L);
  std::map<int, int> linkOf;  // graph link * 2 + direction -> cluster link
  bool any = false;
  for (size_t a = 0; a < L; a++)
    for (size_t b = 0; b < L; b++) {
      if (a == b || topo::peerTopoKind(sys_, {h, gpus[a]}, {h, gpus[b]}) != topo::PeerTopoKind::Shm) continue;
      const topo::Path p = topo::findPath(sys_, gpus[a], gpus[b]);
      for (size_t k = 1; k + 1 < p.hops.size(); k++) {
        const topo::Hop& hop = p.hops[k];
        const topo::Link& l = sys_.links[size_t(hop.link)];
        auto [it, fresh] = linkOf.emplace(hop.link * 2 + (hop.forward ? 0 : 1), -1);
        if (fresh) {
          const int from = hop.forward ? l.a : l.b, to = hop.forward ? l.b : l.a;
          it->second = c.addLink(l.bw, 0, sys_.key(from) + "->" + sys_.key(to));
        }
        pairs[a * L + b].push_back(it->second);
        any = true;
      }
    }
  if (any) c.hostVia.back() = std::move(pairs);
}

// Fewest-hops routes between switches (breadth first, neighbours in link
// order: one route per pair, no multipath); every NIC's switch must reach
// the first host's.
void Builder::routes() {
  Cluster& c = out_.cluster;
  const size_t n = size_t(c.nSwitches);
  c.switchRoute.assign(n * n, {});
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (size_t src = 0; src < n; src++) {
    std::vector<int> viaLink(n, -1), from(n, -1), queue{int(src)};
    reach[src][src] = 1;
    for (size_t q = 0; q < queue.size(); q++)
      for (auto [next, link] : adj_[size_t(queue[q])])
        if (!reach[src][size_t(next)]) {
          reach[src][size_t(next)] = 1;
          from[size_t(next)] = queue[q];
          viaLink[size_t(next)] = link;
          queue.push_back(next);
        }
    for (size_t dst = 0; dst < n; dst++) {
      auto& r = c.switchRoute[src * n + dst];
      for (int at = int(dst); at != int(src) && reach[src][dst]; at = from[size_t(at)]) r.push_back(viaLink[size_t(at)]);
      std::reverse(r.begin(), r.end());
    }
  }
  if (hostNics_.empty() || hostNics_[0].empty()) return;
  const int home = c.nicSwitch[size_t(hostNics_[0][0])];
  for (size_t h = 0; h < hostNics_.size(); h++)
    for (int nic : hostNics_[h])
      if (!reach[size_t(c.nicSwitch[size_t(nic)])][size_t(home)])
        raise(weftInvalidArgument, "topology: host '%s' is disconnected: its NIC's switch has no route to host '%s'",
              sys_.hosts[h].c_str(), sys_.hosts[0].c_str());
}

void Builder::summarize() {
  const Cluster& c = out_.cluster;
  SimpleCluster& s = out_.summary;
  s.layout = out_.layout;
  s.stepOverheadUs = s_.stepUs;
  s.intraGBs = 1e300;
  for (size_t r = 0; r < c.hostOf.size(); r++) s.intraGBs = std::min(s.intraGBs, c.linkGBs[size_t(c.rankOut[r])]);
  s.intraLatUs = c.hostOf.empty() ? 1 : c.linkLatUs[size_t(c.rankOut[0])];
  s.nicsPerHost = 1 << 20;
  for (const auto& nics : hostNics_) s.nicsPerHost = std::min(s.nicsPerHost, std::max(int(nics.size()), 1));
  s.nicGBs = c.nicUp.empty() ? s.intraGBs : 1e300;
  for (int up : c.nicUp) s.nicGBs = std::min(s.nicGBs, c.linkGBs[size_t(up)]);
  s.hostNicGBs.assign(c.hostNics.size(), 1e300);
  for (size_t h = 0; h < c.hostNics.size(); h++)
    for (int nic : c.hostNics[h]) s.hostNicGBs[h] = std::min(s.hostNicGBs[h], c.linkGBs[size_t(c.nicUp[size_t(nic)])]);
  // The network latency: first host to last, NIC to NIC.
  s.netLatUs = 0;
  if (c.hostOf.size() > 1 && c.hostOf.front() != c.hostOf.back()) {
    std::vector<int> links;
    c.route(0, int(c.hostOf.size()) - 1, 0, &links);
    for (int l : links) s.netLatUs += c.linkLatUs[size_t(l)];
  }
}

}  // namespace

TopoCluster topoClusterFromString(const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception&) {
    doc = Json();  // the topology loader names the line and column
  }
  SimSection section;
  if (doc.is_object() && doc.contains("simulation")) {
    section = parseSection(doc["simulation"]);
    doc.erase("simulation");
  }
  auto shared = std::make_shared<const topo::System>(topo::loadString(doc.is_null() ? text : doc.dump()));
  const topo::System& sys = *shared;
  std::vector<std::string> hostKeys(sys.hosts.size());
  if (doc.is_object() && doc.contains("hosts") && doc["hosts"].is_array() && doc["hosts"].size() == sys.hosts.size())
    for (size_t h = 0; h < sys.hosts.size(); h++) {
      Json host = doc["hosts"][h];
      if (!host.is_object() || host.value("name", "") != sys.hosts[h]) continue;
      host.erase("name");
      hostKeys[h] = host.dump();
    }
  TopoCluster out = Builder(sys, section, std::move(hostKeys)).build();
  out.system = std::move(shared);
  return out;
}

std::vector<std::vector<int>> communicatorRingOrders(const TopoCluster& t, int nChannels) {
  return communicatorRings(t, nChannels).orders;
}

topo::CommRings communicatorRings(const TopoCluster& t, int nChannels) {
  const std::vector<int>& hostOf = t.cluster.hostOf;
  if (!t.system || t.places.size() != hostOf.size() || nChannels < 1 || nChannels > topo::kMaxViewChannels) return {};
  const bool multiHost = t.layout.size() > 1;
  std::vector<topo::HostRingView> views(hostOf.size());
  // A host's views depend on its own graph alone: hosts described alike
  // share them (512 hosts of 8 GPUs would otherwise search paths 512 times).
  std::map<std::string, std::vector<topo::HostRingView>> byKey;
  for (size_t first = 0; first < hostOf.size();) {
    const size_t h = size_t(hostOf[first]);
    size_t end = first;
    while (end < hostOf.size() && hostOf[end] == hostOf[first]) end++;
    const std::string key = h < t.hostKeys.size() && !t.hostKeys[h].empty()
                                ? t.hostKeys[h] + "#" + std::to_string(end - first)
                                : "";
    auto it = key.empty() ? byKey.end() : byKey.find(key);
    if (it == byKey.end()) {
      std::vector<topo::RankPlace> mine(t.places.begin() + long(first), t.places.begin() + long(end));
      auto v = topo::hostRingViews(*t.system, mine, nChannels, multiHost);
      it = byKey.emplace(key.empty() ? "#" + std::to_string(h) : key, std::move(v)).first;
    }
    std::copy(it->second.begin(), it->second.end(), views.begin() + long(first));
    first = end;
  }
  return topo::composeRings(hostOf, views, nChannels);
}

TopoCluster loadTopoCluster(const std::string& path) {
  std::ifstream in(path);
  if (!in) raise(weftInvalidArgument, "%s: cannot read the file", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return topoClusterFromString(ss.str());
  } catch (const Error& e) {
    raise(e.code(), "%s: %s", path.c_str(), e.what());
  }
}

}  // namespace weft::sim
