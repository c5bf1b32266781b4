// What hwloc sees of network and GPU devices only as PCI functions, filled
// in from the OS: IB/RoCE ports and network interfaces from sysfs, GPUs
// and NVLink from NVML. Each step completes the nodes hwloc made, or adds
// nodes of its own.
#include "src/topology/detect.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "src/util/log.h"

namespace weft::topo::detail {

// InfiniBand and RoCE ports from sysfs, which needs no verbs library:
// <root>/class/infiniband/<dev>/ports/<p>/{state,rate,link_layer,gids/<i>,
// gid_attrs/types/<i>,gid_attrs/ndevs/<i>}. One NIC node per port; the
// first port of a device completes the node hwloc made for its PCI function.
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

// Network interfaces from the OS: getifaddrs for addresses and flags,
// <root>/class/net/<if>/{speed,operstate,type,device} for the rest. An
// interface on a PCI NIC completes that NIC's node; others (loopback,
// virtual) get a node attached to their NUMA node's CPU.
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

// NVIDIA GPUs and NVLink through NVML, opened with dlopen so the library
// neither links nor needs the driver: without libnvidia-ml.so.1 (or without
// a GPU) this step reports false and GPUs stay as hwloc saw them.
// The few NVML declarations below follow NVML's documented C ABI.
namespace {

using NvmlDevice = struct NvmlDeviceOpaque*;
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;
constexpr int kNvmlRemoteGpu = 0;
constexpr int kNvmlP2pCapsRead = 0;
constexpr int kNvmlP2pOk = 0;

struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*handle)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*pci)(NvmlDevice, NvmlPciInfo*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*cc)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*linkState)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  NvmlReturn (*remoteType)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*p2p)(NvmlDevice, NvmlDevice, int, int*) = nullptr;

  bool open() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    bool ok = sym(init, "nvmlInit_v2") && sym(shutdown, "nvmlShutdown") && sym(count, "nvmlDeviceGetCount_v2") &&
              sym(handle, "nvmlDeviceGetHandleByIndex_v2") &&
              (sym(pci, "nvmlDeviceGetPciInfo_v3") || sym(pci, "nvmlDeviceGetPciInfo_v2"));
    // Optional entry points: older drivers lack some.
    sym(name, "nvmlDeviceGetName");
    sym(cc, "nvmlDeviceGetCudaComputeCapability");
    sym(linkState, "nvmlDeviceGetNvLinkState");
    sym(remotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    sym(remoteType, "nvmlDeviceGetNvLinkRemoteDeviceType");
    sym(p2p, "nvmlDeviceGetP2PStatus");
    if (!ok || init() != kNvmlSuccess) {
      dlclose(lib);
      lib = nullptr;
      return false;
    }
    return true;
  }
  ~Nvml() {
    if (lib) {
      shutdown();
      dlclose(lib);
    }
  }

  template <typename F>
  bool sym(F& f, const char* symbol) {
    f = reinterpret_cast<F>(dlsym(lib, symbol));
    return f != nullptr;
  }
};

// NVML writes "00000000:18:00.0"; the graph uses "0000:18:00.0".
std::string normalBusId(const char* s) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return s;
  char buf[32];
  snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", dom & 0xffff, bus, dev, fn);
  return buf;
}

// NVLink: links per remote GPU, or per NVSwitch (all switches of a host
// are one NvSwitch node: any GPU reaches any other through them).
void addNvLinks(System& sys, int host, const Nvml& nvml, const std::vector<NvmlDevice>& devs,
                const std::vector<int>& nodes, const std::map<std::string, int>& byBus) {
  int nvswitch = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || !nvml.linkState || !nvml.remotePci) continue;
    std::map<int, int> toGpu;
    int toSwitch = 0;
    for (unsigned l = 0; l < kNvmlMaxLinks; ++l) {
      int active = 0;
      if (nvml.linkState(devs[i], l, &active) != kNvmlSuccess || !active) continue;
      NvmlPciInfo remote{};
      if (nvml.remotePci(devs[i], l, &remote) != kNvmlSuccess) continue;
      int type = kNvmlRemoteGpu;
      if (nvml.remoteType && nvml.remoteType(devs[i], l, &type) != kNvmlSuccess) type = -1;
      auto peer = byBus.find(normalBusId(remote.busId));
      if (type == kNvmlRemoteGpu && peer != byBus.end()) ++toGpu[peer->second];
      else ++toSwitch;
    }
    double perLink = nvlinkBwPerLink(sys.nodes[nodes[i]].sm);
    for (auto [peer, count] : toGpu)
      if (peer > nodes[i]) sys.addLink(nodes[i], peer, LinkKind::NvLink, count * perLink, count);
    if (toSwitch) {
      if (nvswitch < 0) {
        Node s;
        s.kind = NodeKind::NvSwitch;
        s.host = host;
        s.id = nextId(sys, host, "nvswitch");
        nvswitch = sys.addNode(s);
      }
      sys.addLink(nodes[i], nvswitch, LinkKind::NvLink, toSwitch * perLink, toSwitch);
    }
  }
}

}  // namespace

bool detectNvmlGpus(System& sys, int host) {
  Nvml nvml;
  if (!nvml.open()) return false;
  unsigned n = 0;
  if (nvml.count(&n) != kNvmlSuccess) return false;

  std::vector<NvmlDevice> devs(n);
  std::vector<int> nodes(n, -1);
  std::map<std::string, int> byBus;
  for (unsigned i = 0; i < n; ++i) {
    NvmlPciInfo info{};
    if (nvml.handle(i, &devs[i]) != kNvmlSuccess || nvml.pci(devs[i], &info) != kNvmlSuccess) continue;
    std::string busId = normalBusId(info.busId);
    int idx = -1;
    for (int g : sys.nodesOf(NodeKind::Gpu, host))
      if (sys.nodes[g].busId == busId) idx = g;
    if (idx < 0) {
      // hwloc did not list it (no PCI info): attach to the first CPU.
      Node node;
      node.kind = NodeKind::Gpu;
      node.host = host;
      node.id = nextId(sys, host, "gpu");
      node.busId = busId;
      idx = sys.addNode(node);
      attachToCpu(sys, idx, -1, LinkKind::Pci, kPcieGen3x16Bw);
    }
    Node& g = sys.nodes[idx];
    // NVML enumerates in PCI order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID.
    g.cudaDev = static_cast<int>(i);
    char name[96] = {};
    if (nvml.name && nvml.name(devs[i], name, sizeof name) == kNvmlSuccess) g.name = name;
    int major = 0, minor = 0;
    if (nvml.cc && nvml.cc(devs[i], &major, &minor) == kNvmlSuccess) g.sm = major * 10 + minor;
    nodes[i] = idx;
    byBus[busId] = idx;
  }

  addNvLinks(sys, host, nvml, devs, nodes, byBus);

  if (nvml.p2p)
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j) {
        if (i == j || nodes[i] < 0 || nodes[j] < 0) continue;
        int status = kNvmlP2pOk;
        if (nvml.p2p(devs[i], devs[j], kNvmlP2pCapsRead, &status) == kNvmlSuccess && status != kNvmlP2pOk)
          sys.nodes[nodes[i]].noP2p.push_back(sys.nodes[nodes[j]].id);
      }
  WEFT_INFO(kGraph, "topology: NVML reports %u GPUs", n);
  return true;
}

}  // namespace weft::topo::detail
