// InfiniBand and RoCE ports from sysfs, which needs no verbs library:
// <root>/class/infiniband/<dev>/ports/<p>/{state,rate,link_layer,gids/<i>,
// gid_attrs/types/<i>,gid_attrs/ndevs/<i>}. One NIC node per port; the
// first port of a device completes the node hwloc made for its PCI function.
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "src/topology/detect_internal.h"

namespace weft::topo::detail {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> sortedEntries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.push_back(it->path().filename().string());
  // Numeric names (ports, GID indices) sort by value.
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  });
  return out;
}

bool zeroGid(const std::string& gid) {
  return gid.find_first_not_of("0:") == std::string::npos;
}

void readPort(Node& n, const fs::path& port) {
  // state: "4: ACTIVE"; rate: "100 Gb/sec (4X EDR)"
  n.up = readSysfs(port / "state").find("ACTIVE") != std::string::npos;
  n.speedGbps = atof(readSysfs(port / "rate").c_str());
  std::string layer = readSysfs(port / "link_layer");
  n.linkLayer = layer.empty() ? "InfiniBand" : layer;
  for (const auto& idx : sortedEntries(port / "gids")) {
    std::string gid = readSysfs(port / "gids" / idx);
    if (gid.empty() || zeroGid(gid)) continue;
    Gid g;
    g.index = atoi(idx.c_str());
    g.gid = gid;
    g.type = readSysfs(port / "gid_attrs" / "types" / idx);
    n.gids.push_back(g);
    if (n.netdev.empty()) n.netdev = readSysfs(port / "gid_attrs" / "ndevs" / idx);
  }
}

}  // namespace

void detectIbPorts(System& sys, int host, const std::string& sysRoot) {
  fs::path root = fs::path(sysRoot) / "class" / "infiniband";
  for (const auto& dev : sortedEntries(root)) {
    std::string busId = pciBusIdOfLink((root / dev / "device").string());
    int numa = -1;
    if (std::string s = readSysfs((root / dev / "device" / "numa_node").string()); !s.empty()) numa = atoi(s.c_str());
    // The node hwloc made for this PCI function, still without an IB port.
    int pciNode = -1;
    for (int nic : sys.nodesOf(NodeKind::Nic, host)) {
      const Node& n = sys.nodes[nic];
      if (n.port == 0 && ((!busId.empty() && n.busId == busId) || n.ibDevice == dev)) pciNode = nic;
    }
    int pciParentLink = -1;
    if (pciNode >= 0) {
      auto links = sys.linksOf(pciNode);
      if (!links.empty()) pciParentLink = links.front();
    }
    for (const auto& portName : sortedEntries(root / dev / "ports")) {
      Node n;
      int idx = pciNode;
      if (idx >= 0) {
        n = sys.nodes[idx];
      } else {
        n.kind = NodeKind::Nic;
        n.host = host;
        n.id = nextId(sys, host, "nic");
        n.busId = busId;
        n.numa = numa;
      }
      n.ibDevice = dev;
      n.port = atoi(portName.c_str());
      readPort(n, root / dev / "ports" / portName);
      if (idx >= 0) {
        sys.nodes[idx] = n;
        pciNode = -1;  // later ports get nodes of their own
        continue;
      }
      int added = sys.addNode(n);
      if (pciParentLink >= 0) {
        // Another port of the same PCI function: same attachment.
        const Link& l = sys.links[pciParentLink];
        int parent = sys.nodes[l.a].kind == NodeKind::Nic ? l.b : l.a;
        sys.addLink(parent, added, l.kind, l.bw);
      } else {
        attachToCpu(sys, added, numa, LinkKind::Pci, kPcieGen3x16Bw);
      }
    }
  }
}

}  // namespace weft::topo::detail
