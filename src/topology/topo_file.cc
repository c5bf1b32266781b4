#include "src/topology/topo_file.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "src/util/error.h"

namespace weft::topo {

namespace {

// Objects keep their members in insertion order, so dumped files read in a
// natural order (id and kind first).
using Json = nlohmann::ordered_json;

// Typed access; a wrong type is weftInvalidArgument naming `what`.
[[noreturn]] void wrongType(const char* what, const char* must) {
  raise(weftInvalidArgument, "topology JSON: %s must be %s", what, must);
}

bool asBool(const Json& v, const char* what) {
  if (!v.is_boolean()) wrongType(what, "true or false");
  return v.get<bool>();
}

double asNumber(const Json& v, const char* what) {
  if (!v.is_number()) wrongType(what, "a number");
  return v.get<double>();
}

int asInt(const Json& v, const char* what) {
  const double d = asNumber(v, what);
  if (d != std::floor(d) || std::fabs(d) > 2e9) wrongType(what, "an integer");
  return static_cast<int>(d);
}

const std::string& asString(const Json& v, const char* what) {
  if (!v.is_string()) wrongType(what, "a string");
  return v.get_ref<const std::string&>();
}

const Json::array_t& asArray(const Json& v, const char* what) {
  if (!v.is_array()) wrongType(what, "an array");
  return v.get_ref<const Json::array_t&>();
}

const Json::object_t& asObject(const Json& v, const char* what) {
  if (!v.is_object()) wrongType(what, "an object");
  return v.get_ref<const Json::object_t&>();
}

// Object member or nullptr when absent (or when v is not an object).
const Json* member(const Json& v, const char* key) {
  if (!v.is_object()) return nullptr;
  auto it = v.find(key);
  return it == v.end() ? nullptr : &*it;
}

// The whole document; a syntax error names its line and column.
Json parseDocument(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    int line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    // nlohmann's text after its own "parse error at line L, column C: ".
    std::string why = e.what();
    const size_t at = why.find("column ");
    const size_t colon = at == std::string::npos ? at : why.find(": ", at);
    if (colon != std::string::npos) why = why.substr(colon + 2);
    raise(weftInvalidArgument, "topology JSON: %s at line %d column %d", why.c_str(), line, col);
  } catch (const Json::exception& e) {  // a number out of range
    std::string why = e.what();
    if (const size_t tag = why.find("] "); tag != std::string::npos) why = why.substr(tag + 2);
    raise(weftInvalidArgument, "topology JSON: %s", why.c_str());
  }
}

// Scalars as JSON text. Numbers print in shortest round-trip form, so a
// reload reproduces every double exactly; strings that are not UTF-8 are
// written with replacement characters rather than refused.
void appendScalar(std::string& out, const Json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) raise(weftInvalidArgument, "topology JSON: cannot write a non-finite number");
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
    out.append(buf, p);
    return;
  }
  out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Arrays of scalars stay on one line: GID tables and address lists would
// otherwise dominate a dump. So do objects of scalars and such arrays (one
// node, one link).
bool isFlat(const Json& v) {
  for (const auto& e : v) {
    if (e.is_object()) return false;
    if (e.is_array() && (v.is_array() || !isFlat(e))) return false;
  }
  return true;
}

void dumpTo(std::string& out, const Json& v, int indent) {
  if (!v.is_structured()) return appendScalar(out, v);
  const bool object = v.is_object();
  if (v.empty()) {
    out += object ? "{}" : "[]";
    return;
  }
  const bool flat = isFlat(v);
  out += object ? "{" : "[";
  if (!flat) out += "\n";
  const std::string pad(indent + 2, ' ');
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    if (i) out += flat ? ", " : ",\n";
    if (!flat) out += pad;
    if (object) {
      appendScalar(out, Json(it.key()));
      out += ": ";
    }
    dumpTo(out, *it, indent + 2);
  }
  if (!flat) out += "\n" + std::string(indent, ' ');
  out += object ? "}" : "]";
}

std::string dumpDocument(const Json& doc) {
  std::string out;
  dumpTo(out, doc, 0);
  out.push_back('\n');
  return out;
}

Json nodeToJson(const Node& n) {
  Json j = Json::object();
  j["id"] = n.id;
  j["kind"] = toString(n.kind);
  if (!n.name.empty()) j["name"] = n.name;
  if (n.numa >= 0) j["numa"] = n.numa;
  if (n.package >= 0) j["package"] = n.package;
  if (n.cores) j["cores"] = n.cores;
  if (!n.busId.empty()) j["bus_id"] = n.busId;
  if (n.cudaDev >= 0) j["cuda_dev"] = n.cudaDev;
  if (n.sm) j["sm"] = n.sm;
  if (!n.noP2p.empty()) {
    Json a = Json::array();
    for (const auto& s : n.noP2p) a.emplace_back(s);
    j["no_p2p"] = std::move(a);
  }
  if (!n.netdev.empty()) j["netdev"] = n.netdev;
  if (!n.ibDevice.empty()) j["ib_device"] = n.ibDevice;
  if (n.port) j["port"] = n.port;
  if (!n.linkLayer.empty()) j["link_layer"] = n.linkLayer;
  if (n.speedGbps) j["speed_gbps"] = n.speedGbps;
  if (n.kind == NodeKind::Nic) j["up"] = n.up;
  if (!n.addresses.empty()) {
    Json a = Json::array();
    for (const auto& s : n.addresses) a.emplace_back(s);
    j["addresses"] = std::move(a);
  }
  if (!n.gids.empty()) {
    // "index type gid" strings keep a GID table to one line.
    Json a = Json::array();
    for (const auto& g : n.gids) a.emplace_back(std::to_string(g.index) + " " + g.gid + " " + g.type);
    j["gids"] = std::move(a);
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
  for (const auto& [k, v] : asObject(j, "node")) {
    if (k == "id") n.id = asString(v, "node id");
    else if (k == "kind") { n.kind = nodeKindFromString(asString(v, "node kind")); haveKind = true; }
    else if (k == "name") n.name = asString(v, "node name");
    else if (k == "numa") n.numa = asInt(v, "numa");
    else if (k == "package") n.package = asInt(v, "package");
    else if (k == "cores") n.cores = asInt(v, "cores");
    else if (k == "bus_id") n.busId = asString(v, "bus_id");
    else if (k == "cuda_dev") n.cudaDev = asInt(v, "cuda_dev");
    else if (k == "sm") n.sm = asInt(v, "sm");
    else if (k == "netdev") n.netdev = asString(v, "netdev");
    else if (k == "ib_device") n.ibDevice = asString(v, "ib_device");
    else if (k == "port") n.port = asInt(v, "port");
    else if (k == "link_layer") n.linkLayer = asString(v, "link_layer");
    else if (k == "speed_gbps") n.speedGbps = asNumber(v, "speed_gbps");
    else if (k == "up") n.up = asBool(v, "up");
    else if (k == "no_p2p") {
      for (const auto& a : asArray(v, "no_p2p")) n.noP2p.push_back(asString(a, "no_p2p entry"));
    } else if (k == "addresses") {
      for (const auto& a : asArray(v, "addresses")) n.addresses.push_back(asString(a, "address"));
    } else if (k == "gids") {
      for (const auto& g : asArray(v, "gids")) n.gids.push_back(parseGid(asString(g, "gid")));
    } else {
      // Unknown members are refused: a typo must not silently drop a fact.
      raise(weftInvalidArgument, "topology JSON: node '%s' has unknown member '%s'", n.id.c_str(), k.c_str());
    }
  }
  if (!haveKind) raise(weftInvalidArgument, "topology JSON: node '%s' has no kind", n.id.c_str());
  return n;
}

Json linkToJson(const System& sys, const Link& l, bool fullKeys) {
  Json j = Json::object();
  j["a"] = fullKeys ? sys.key(l.a) : sys.nodes[l.a].id;
  j["b"] = fullKeys ? sys.key(l.b) : sys.nodes[l.b].id;
  j["kind"] = toString(l.kind);
  j["bw"] = l.bw;
  if (l.latency != defaultLatency(l.kind)) j["latency"] = toString(l.latency);
  if (l.count != 1) j["count"] = l.count;
  if (l.pciGen) j["pci_gen"] = l.pciGen;
  if (l.pciWidth) j["pci_width"] = l.pciWidth;
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
  for (const auto& [k, v] : asObject(j, "link")) {
    if (k == "a") l.a = resolve(sys, asString(v, "link end a"), host);
    else if (k == "b") l.b = resolve(sys, asString(v, "link end b"), host);
    else if (k == "kind") { l.kind = linkKindFromString(asString(v, "link kind")); haveKind = true; }
    else if (k == "bw") { l.bw = asNumber(v, "bw"); haveBw = true; }
    else if (k == "latency") { l.latency = latencyFromString(asString(v, "latency")); haveLatency = true; }
    else if (k == "count") l.count = asInt(v, "count");
    else if (k == "pci_gen") l.pciGen = asInt(v, "pci_gen");
    else if (k == "pci_width") l.pciWidth = asInt(v, "pci_width");
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

Json toJson(const System& sys) {
  Json doc = Json::object();
  doc["weft_topology"] = kTopoFileVersion;
  Json hosts = Json::array();
  for (size_t h = 0; h < sys.hosts.size(); ++h) {
    Json host = Json::object();
    host["name"] = sys.hosts[h];
    Json nodes = Json::array(), links = Json::array();
    for (const Node& n : sys.nodes)
      if (n.host == static_cast<int>(h)) nodes.push_back(nodeToJson(n));
    for (const Link& l : sys.links)
      if (sys.nodes[l.a].host == static_cast<int>(h) && sys.nodes[l.b].host == static_cast<int>(h))
        links.push_back(linkToJson(sys, l, false));
    host["nodes"] = std::move(nodes);
    host["links"] = std::move(links);
    hosts.push_back(std::move(host));
  }
  doc["hosts"] = std::move(hosts);
  Json switches = Json::array(), netLinks = Json::array();
  for (const Node& n : sys.nodes)
    if (n.host < 0) switches.push_back(nodeToJson(n));
  for (const Link& l : sys.links)
    if (sys.nodes[l.a].host < 0 || sys.nodes[l.a].host != sys.nodes[l.b].host)
      netLinks.push_back(linkToJson(sys, l, true));
  if (!switches.empty() || !netLinks.empty()) {
    Json net = Json::object();
    net["switches"] = std::move(switches);
    net["links"] = std::move(netLinks);
    doc["network"] = std::move(net);
  }
  return doc;
}

System fromJson(const Json& doc) {
  const Json* version = member(doc, "weft_topology");
  if (!version) raise(weftInvalidArgument, "topology JSON: not a weft topology (no \"weft_topology\" member)");
  if (asInt(*version, "weft_topology") != kTopoFileVersion)
    raise(weftInvalidArgument, "topology JSON: version %d, this weft reads %d", asInt(*version, "weft_topology"),
          kTopoFileVersion);
  for (const auto& [k, v] : asObject(doc, "document"))
    if (k != "weft_topology" && k != "hosts" && k != "network" && k != "comment")
      raise(weftInvalidArgument, "topology JSON: unknown top-level member '%s'", k.c_str());

  System sys;
  const Json* hosts = member(doc, "hosts");
  if (!hosts) raise(weftInvalidArgument, "topology JSON: no \"hosts\"");
  std::set<std::string> names;
  // Nodes first (all hosts and switches), then links, so network links can
  // name any node.
  for (const Json& h : asArray(*hosts, "hosts")) {
    const Json* name = member(h, "name");
    if (!name) raise(weftInvalidArgument, "topology JSON: a host has no name");
    const std::string& hn = asString(*name, "host name");
    if (hn.empty() || hn == "net" || hn.find('/') != std::string::npos || !names.insert(hn).second)
      raise(weftInvalidArgument, "topology JSON: bad or duplicate host name '%s'", hn.c_str());
    int host = sys.addHost(hn);
    for (const auto& [k, v] : asObject(h, "host"))
      if (k != "name" && k != "nodes" && k != "links")
        raise(weftInvalidArgument, "topology JSON: host '%s' has unknown member '%s'", hn.c_str(), k.c_str());
    if (const Json* nodes = member(h, "nodes"))
      for (const Json& n : asArray(*nodes, "nodes")) sys.addNode(nodeFromJson(n, host));
  }
  const Json* net = member(doc, "network");
  if (net) {
    for (const auto& [k, v] : asObject(*net, "network"))
      if (k != "switches" && k != "links") raise(weftInvalidArgument, "topology JSON: network has unknown member '%s'", k.c_str());
    if (const Json* sw = member(*net, "switches"))
      for (const Json& n : asArray(*sw, "switches")) sys.addNode(nodeFromJson(n, -1));
  }
  int host = 0;
  for (const Json& h : asArray(*hosts, "hosts")) {
    if (const Json* links = member(h, "links"))
      for (const Json& l : asArray(*links, "links")) linkFromJson(sys, l, host);
    ++host;
  }
  if (net)
    if (const Json* links = member(*net, "links"))
      for (const Json& l : asArray(*links, "links")) linkFromJson(sys, l, -1);
  return sys;
}

}  // namespace

std::string dumpString(const System& sys) { return dumpDocument(toJson(sys)); }

System loadString(const std::string& text) { return fromJson(parseDocument(text)); }

void dumpFile(const System& sys, const std::string& path, const std::string& comment) {
  Json doc = toJson(sys);
  if (!comment.empty()) doc["comment"] = comment;
  // Written beside the target and renamed over it, so a reader (or another
  // process dumping the same file) never sees half a file.
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                          std::to_string(reinterpret_cast<uintptr_t>(&doc));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) raise(weftSystemError, "topology: cannot write %s: %s", tmp.c_str(), strerror(errno));
    out << dumpDocument(doc);
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
