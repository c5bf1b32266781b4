#include "src/topology/topo_file.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "src/util/error.h"

namespace weft::topo {

namespace {

Json nodeToJson(const Node& n) {
  Json j = Json::Object{};
  j.set("id", n.id);
  j.set("kind", toString(n.kind));
  if (!n.name.empty()) j.set("name", n.name);
  if (n.numa >= 0) j.set("numa", n.numa);
  if (n.package >= 0) j.set("package", n.package);
  if (n.cores) j.set("cores", n.cores);
  if (!n.busId.empty()) j.set("bus_id", n.busId);
  if (n.cudaDev >= 0) j.set("cuda_dev", n.cudaDev);
  if (n.sm) j.set("sm", n.sm);
  if (!n.noP2p.empty()) {
    Json::Array a;
    for (const auto& s : n.noP2p) a.emplace_back(s);
    j.set("no_p2p", std::move(a));
  }
  if (!n.netdev.empty()) j.set("netdev", n.netdev);
  if (!n.ibDevice.empty()) j.set("ib_device", n.ibDevice);
  if (n.port) j.set("port", n.port);
  if (!n.linkLayer.empty()) j.set("link_layer", n.linkLayer);
  if (n.speedGbps) j.set("speed_gbps", n.speedGbps);
  if (n.kind == NodeKind::Nic) j.set("up", n.up);
  if (!n.addresses.empty()) {
    Json::Array a;
    for (const auto& s : n.addresses) a.emplace_back(s);
    j.set("addresses", std::move(a));
  }
  if (!n.gids.empty()) {
    // "index type gid" strings keep a GID table to one line.
    Json::Array a;
    for (const auto& g : n.gids) a.emplace_back(std::to_string(g.index) + " " + g.gid + " " + g.type);
    j.set("gids", std::move(a));
  }
  return j;
}

Gid parseGid(const std::string& s) {
  Gid g;
  std::istringstream in(s);
  if (!(in >> g.index >> g.gid)) raise(weftInvalidArgument, "topology JSON: bad gid entry '%s'", s.c_str());
  std::getline(in, g.type);
  if (!g.type.empty() && g.type[0] == ' ') g.type.erase(0, 1);
  return g;
}

Node nodeFromJson(const Json& j, int host) {
  Node n;
  n.host = host;
  bool haveKind = false;
  for (const auto& [k, v] : j.asObject("node")) {
    if (k == "id") n.id = v.asString("node id");
    else if (k == "kind") { n.kind = nodeKindFromString(v.asString("node kind")); haveKind = true; }
    else if (k == "name") n.name = v.asString("node name");
    else if (k == "numa") n.numa = v.asInt("numa");
    else if (k == "package") n.package = v.asInt("package");
    else if (k == "cores") n.cores = v.asInt("cores");
    else if (k == "bus_id") n.busId = v.asString("bus_id");
    else if (k == "cuda_dev") n.cudaDev = v.asInt("cuda_dev");
    else if (k == "sm") n.sm = v.asInt("sm");
    else if (k == "netdev") n.netdev = v.asString("netdev");
    else if (k == "ib_device") n.ibDevice = v.asString("ib_device");
    else if (k == "port") n.port = v.asInt("port");
    else if (k == "link_layer") n.linkLayer = v.asString("link_layer");
    else if (k == "speed_gbps") n.speedGbps = v.asNumber("speed_gbps");
    else if (k == "up") n.up = v.asBool("up");
    else if (k == "no_p2p") {
      for (const auto& a : v.asArray("no_p2p")) n.noP2p.push_back(a.asString("no_p2p entry"));
    } else if (k == "addresses") {
      for (const auto& a : v.asArray("addresses")) n.addresses.push_back(a.asString("address"));
    } else if (k == "gids") {
      for (const auto& g : v.asArray("gids")) n.gids.push_back(parseGid(g.asString("gid")));
    } else {
      // Unknown members are refused: a typo must not silently drop a fact.
      raise(weftInvalidArgument, "topology JSON: node '%s' has unknown member '%s'", n.id.c_str(), k.c_str());
    }
  }
  if (!haveKind) raise(weftInvalidArgument, "topology JSON: node '%s' has no kind", n.id.c_str());
  return n;
}

Json linkToJson(const System& sys, const Link& l, bool fullKeys) {
  Json j = Json::Object{};
  j.set("a", fullKeys ? sys.key(l.a) : sys.nodes[l.a].id);
  j.set("b", fullKeys ? sys.key(l.b) : sys.nodes[l.b].id);
  j.set("kind", toString(l.kind));
  j.set("bw", l.bw);
  if (l.latency != defaultLatency(l.kind)) j.set("latency", toString(l.latency));
  if (l.count != 1) j.set("count", l.count);
  if (l.pciGen) j.set("pci_gen", l.pciGen);
  if (l.pciWidth) j.set("pci_width", l.pciWidth);
  return j;
}

// Resolves a link end: a local id inside a host's list, "host/id" or
// "net/id" in the network list.
int resolve(const System& sys, const std::string& ref, int host) {
  int node = -1;
  if (host >= 0) {
    node = sys.find(host, ref);
  } else if (auto slash = ref.find('/'); slash != std::string::npos) {
    std::string h = ref.substr(0, slash), id = ref.substr(slash + 1);
    if (h == "net") {
      node = sys.find(-1, id);
    } else {
      for (size_t i = 0; i < sys.hosts.size(); ++i)
        if (sys.hosts[i] == h) node = sys.find(static_cast<int>(i), id);
    }
  }
  if (node < 0) raise(weftInvalidArgument, "topology JSON: link names unknown node '%s'", ref.c_str());
  return node;
}

// A hand-written file may leave out a link's bandwidth when it follows from
// the devices: PCIe from gen/width, NVLink from count and GPU generation,
// a NIC's network link from its speed.
double impliedBw(const System& sys, const Link& l) {
  if (l.kind == LinkKind::Pci) return pcieBw(l.pciGen, l.pciWidth);
  const Node& a = sys.nodes[l.a];
  const Node& b = sys.nodes[l.b];
  if (l.kind == LinkKind::NvLink) {
    int sm = a.kind == NodeKind::Gpu ? a.sm : b.sm;
    return l.count * nvlinkBwPerLink(sm);
  }
  if (l.kind == LinkKind::Net || l.kind == LinkKind::Loc) {
    double speed = a.kind == NodeKind::Nic ? a.speedGbps : b.kind == NodeKind::Nic ? b.speedGbps : 0;
    if (speed > 0) return netBw(speed);
  }
  raise(weftInvalidArgument, "topology JSON: link %s-%s needs a bw", sys.key(l.a).c_str(), sys.key(l.b).c_str());
}

void linkFromJson(System& sys, const Json& j, int host) {
  Link l;
  bool haveKind = false, haveLatency = false, haveBw = false;
  for (const auto& [k, v] : j.asObject("link")) {
    if (k == "a") l.a = resolve(sys, v.asString("link end a"), host);
    else if (k == "b") l.b = resolve(sys, v.asString("link end b"), host);
    else if (k == "kind") { l.kind = linkKindFromString(v.asString("link kind")); haveKind = true; }
    else if (k == "bw") { l.bw = v.asNumber("bw"); haveBw = true; }
    else if (k == "latency") { l.latency = latencyFromString(v.asString("latency")); haveLatency = true; }
    else if (k == "count") l.count = v.asInt("count");
    else if (k == "pci_gen") l.pciGen = v.asInt("pci_gen");
    else if (k == "pci_width") l.pciWidth = v.asInt("pci_width");
    else raise(weftInvalidArgument, "topology JSON: link has unknown member '%s'", k.c_str());
  }
  if (l.a < 0 || l.b < 0 || !haveKind) raise(weftInvalidArgument, "topology JSON: a link needs a, b and kind");
  if (l.a == l.b) raise(weftInvalidArgument, "topology JSON: link from %s to itself", sys.key(l.a).c_str());
  if (!haveLatency) l.latency = defaultLatency(l.kind);
  if (!haveBw) l.bw = impliedBw(sys, l);
  if (!(l.bw > 0)) raise(weftInvalidArgument, "topology JSON: link %s-%s has bw <= 0", sys.key(l.a).c_str(),
                         sys.key(l.b).c_str());
  if (host < 0 && sys.nodes[l.a].host >= 0 && sys.nodes[l.a].host == sys.nodes[l.b].host)
    raise(weftInvalidArgument, "topology JSON: network link %s-%s belongs in its host's list", sys.key(l.a).c_str(),
          sys.key(l.b).c_str());
  sys.links.push_back(l);
}

}  // namespace

Json toJson(const System& sys) {
  Json doc = Json::Object{};
  doc.set("weft_topology", kTopoFileVersion);
  Json::Array hosts;
  for (size_t h = 0; h < sys.hosts.size(); ++h) {
    Json host = Json::Object{};
    host.set("name", sys.hosts[h]);
    Json::Array nodes, links;
    for (const Node& n : sys.nodes)
      if (n.host == static_cast<int>(h)) nodes.push_back(nodeToJson(n));
    for (const Link& l : sys.links)
      if (sys.nodes[l.a].host == static_cast<int>(h) && sys.nodes[l.b].host == static_cast<int>(h))
        links.push_back(linkToJson(sys, l, false));
    host.set("nodes", std::move(nodes));
    host.set("links", std::move(links));
    hosts.push_back(std::move(host));
  }
  doc.set("hosts", std::move(hosts));
  Json::Array switches, netLinks;
  for (const Node& n : sys.nodes)
    if (n.host < 0) switches.push_back(nodeToJson(n));
  for (const Link& l : sys.links)
    if (sys.nodes[l.a].host < 0 || sys.nodes[l.a].host != sys.nodes[l.b].host)
      netLinks.push_back(linkToJson(sys, l, true));
  if (!switches.empty() || !netLinks.empty()) {
    Json net = Json::Object{};
    net.set("switches", std::move(switches));
    net.set("links", std::move(netLinks));
    doc.set("network", std::move(net));
  }
  return doc;
}

System fromJson(const Json& doc) {
  const Json* version = doc.find("weft_topology");
  if (!version) raise(weftInvalidArgument, "topology JSON: not a weft topology (no \"weft_topology\" member)");
  if (version->asInt("weft_topology") != kTopoFileVersion)
    raise(weftInvalidArgument, "topology JSON: version %d, this weft reads %d", version->asInt("weft_topology"),
          kTopoFileVersion);
  for (const auto& [k, v] : doc.asObject("document"))
    if (k != "weft_topology" && k != "hosts" && k != "network" && k != "comment")
      raise(weftInvalidArgument, "topology JSON: unknown top-level member '%s'", k.c_str());

  System sys;
  const Json* hosts = doc.find("hosts");
  if (!hosts) raise(weftInvalidArgument, "topology JSON: no \"hosts\"");
  std::set<std::string> names;
  // Nodes first (all hosts and switches), then links, so network links can
  // name any node.
  for (const Json& h : hosts->asArray("hosts")) {
    const Json* name = h.find("name");
    if (!name) raise(weftInvalidArgument, "topology JSON: a host has no name");
    const std::string& hn = name->asString("host name");
    if (hn.empty() || hn == "net" || hn.find('/') != std::string::npos || !names.insert(hn).second)
      raise(weftInvalidArgument, "topology JSON: bad or duplicate host name '%s'", hn.c_str());
    int host = sys.addHost(hn);
    for (const auto& [k, v] : h.asObject("host"))
      if (k != "name" && k != "nodes" && k != "links")
        raise(weftInvalidArgument, "topology JSON: host '%s' has unknown member '%s'", hn.c_str(), k.c_str());
    if (const Json* nodes = h.find("nodes"))
      for (const Json& n : nodes->asArray("nodes")) sys.addNode(nodeFromJson(n, host));
  }
  const Json* net = doc.find("network");
  if (net) {
    for (const auto& [k, v] : net->asObject("network"))
      if (k != "switches" && k != "links") raise(weftInvalidArgument, "topology JSON: network has unknown member '%s'", k.c_str());
    if (const Json* sw = net->find("switches"))
      for (const Json& n : sw->asArray("switches")) sys.addNode(nodeFromJson(n, -1));
  }
  int host = 0;
  for (const Json& h : hosts->asArray("hosts")) {
    if (const Json* links = h.find("links"))
      for (const Json& l : links->asArray("links")) linkFromJson(sys, l, host);
    ++host;
  }
  if (net)
    if (const Json* links = net->find("links"))
      for (const Json& l : links->asArray("links")) linkFromJson(sys, l, -1);
  return sys;
}

std::string dumpString(const System& sys) { return toJson(sys).dump(); }

System loadString(const std::string& text) { return fromJson(Json::parse(text)); }

void dumpFile(const System& sys, const std::string& path, const std::string& comment) {
  Json doc = toJson(sys);
  if (!comment.empty()) doc.set("comment", comment);
  // Written beside the target and renamed over it, so a reader (or another
  // process dumping the same file) never sees half a file.
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                          std::to_string(reinterpret_cast<uintptr_t>(&doc));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) raise(weftSystemError, "topology: cannot write %s: %s", tmp.c_str(), strerror(errno));
    out << doc.dump();
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      raise(weftSystemError, "topology: writing %s failed", tmp.c_str());
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    raise(weftSystemError, "topology: cannot write %s: %s", path.c_str(), strerror(err));
  }
}

System loadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(weftInvalidArgument, "topology: cannot read %s: %s", path.c_str(), strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return loadString(ss.str());
  } catch (const Error& e) {
    raise(e.code(), "%s: %s", path.c_str(), e.what());
  }
}

}  // namespace weft::topo
