// Network interfaces from the OS: getifaddrs for addresses and flags,
// <root>/class/net/<if>/{speed,operstate,type,device} for the rest. An
// interface on a PCI NIC completes that NIC's node; others (loopback,
// virtual) get a node attached to their NUMA node's CPU.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "src/topology/detect_internal.h"

namespace weft::topo::detail {

namespace {

namespace fs = std::filesystem;

// ARPHRD_* values from <net/if_arp.h>, as sysfs "type" reports them.
constexpr int kArpEther = 1;
constexpr int kArpInfiniband = 32;
constexpr int kArpLoopback = 772;

struct Interface {
  unsigned flags = 0;
  std::vector<std::string> addresses;
};

std::map<std::string, Interface> listInterfaces() {
  std::map<std::string, Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_name) continue;
    Interface& itf = out[a->ifa_name];
    itf.flags |= a->ifa_flags;
    if (!a->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
      itf.addresses.push_back(std::string("inet ") + buf);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf, sizeof buf);
      itf.addresses.push_back(std::string("inet6 ") + buf);
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

void detectNetInterfaces(System& sys, int host, const std::string& sysRoot) {
  auto interfaces = listInterfaces();
  fs::path classNet = fs::path(sysRoot) / "class" / "net";
  std::error_code ec;
  for (auto it = fs::directory_iterator(classNet, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    interfaces[it->path().filename().string()];  // sysfs may know interfaces without addresses

  for (auto& [name, itf] : interfaces) {
    fs::path dir = classNet / name;
    int type = atoi(readSysfs((dir / "type").string()).c_str());
    bool loopback = (itf.flags & IFF_LOOPBACK) || type == kArpLoopback;
    std::string busId = pciBusIdOfLink((dir / "device").string());
    int numa = -1;
    if (std::string s = readSysfs((dir / "device" / "numa_node").string()); !s.empty()) numa = atoi(s.c_str());

    int idx = -1;
    for (int nic : sys.nodesOf(NodeKind::Nic, host))
      if (sys.nodes[nic].netdev == name) idx = nic;
    if (idx < 0 && !busId.empty())
      for (int nic : sys.nodesOf(NodeKind::Nic, host))
        if (sys.nodes[nic].busId == busId && sys.nodes[nic].netdev.empty()) idx = nic;
    if (idx < 0) {
      Node n;
      n.kind = NodeKind::Nic;
      n.host = host;
      n.id = nextId(sys, host, "nic");
      n.busId = busId;
      n.numa = numa;
      idx = sys.addNode(n);
      attachToCpu(sys, idx, numa, LinkKind::Loc, kLocalBw);
    }
    Node& n = sys.nodes[idx];
    n.netdev = name;
    n.addresses = itf.addresses;
    if (n.linkLayer.empty())
      n.linkLayer = loopback ? "Loopback" : type == kArpInfiniband ? "InfiniBand" : type == kArpEther ? "Ethernet" : "Other";
    if (n.speedGbps == 0) {
      // Mb/s; -1 or unreadable when the driver does not say (virtio, lo).
      double mbps = atof(readSysfs((dir / "speed").string()).c_str());
      if (mbps > 0) n.speedGbps = mbps / 1000.0;
    }
    if (n.ibDevice.empty()) {
      std::string oper = readSysfs((dir / "operstate").string());
      n.up = oper == "up" || ((oper.empty() || oper == "unknown") && (itf.flags & IFF_UP) && (itf.flags & IFF_RUNNING));
    }
  }
}

}  // namespace weft::topo::detail
