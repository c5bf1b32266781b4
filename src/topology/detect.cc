#include "src/topology/detect.h"

#include <dirent.h>
#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft::topo {

namespace detail {

std::string readSysfs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::string s;
  std::getline(in, s);
  if (in.bad()) return "";
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string pciBusIdOfLink(const std::string& devicePath) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(devicePath, ec);
  if (ec) return "";
  std::string name = target.filename().string();
  // A PCI function looks like dddd:bb:dd.f
  if (name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.') return name;
  return "";
}

std::string nextId(const System& sys, int host, const char* prefix) {
  for (int i = 0;; ++i) {
    std::string id = prefix + std::to_string(i);
    if (sys.find(host, id) < 0) return id;
  }
}

int cpuNodeForNuma(const System& sys, int host, int numa) {
  auto cpus = sys.nodesOf(NodeKind::Cpu, host);
  for (int c : cpus)
    if (sys.nodes[c].numa == numa) return c;
  return cpus.empty() ? -1 : cpus.front();
}

int attachToCpu(System& sys, int node, int numa, LinkKind kind, double bw) {
  int cpu = cpuNodeForNuma(sys, sys.nodes[node].host, numa);
  if (cpu < 0) return -1;
  return sys.addLink(cpu, node, kind, bw);
}

// NUMA nodes, cores and the PCI tree from hwloc. GPUs (NVIDIA display
// class) and NICs (network class) become nodes; PCIe switches become
// PciSwitch nodes; other PCI devices (storage, ...) are left out.
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

struct Topology {
  hwloc_topology_t t = nullptr;
  Topology() {
    if (hwloc_topology_init(&t) != 0) raise(weftSystemError, "topology: hwloc_topology_init failed");
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      raise(weftSystemError, "topology: hwloc_topology_load failed");
    }
  }
  ~Topology() { hwloc_topology_destroy(t); }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
};

std::string busIdOf(hwloc_obj_t o) {
  char buf[32];
  snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus, o->attr->pcidev.dev,
           o->attr->pcidev.func);
  return buf;
}

// hwloc reports the raw link rate (Gen3 x16 = 15.75 GB/s); scale it to the
// achievable rate the rest of the graph uses (Gen3 x16 = 12).
double pciLinkBw(hwloc_obj_t o) {
  float raw = o->type == HWLOC_OBJ_PCI_DEVICE || o->type == HWLOC_OBJ_BRIDGE ? o->attr->pcidev.linkspeed : 0;
  if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI) raw = 0;
  return raw > 0 ? raw * (kPcieGen3x16Bw / 15.75) : kPcieGen3x16Bw;
}

bool isPciPciBridge(hwloc_obj_t o) {
  return o && o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

int numaOf(hwloc_topology_t t, hwloc_obj_t o) {
  hwloc_obj_t nonIo = hwloc_get_non_io_ancestor_obj(t, o);
  if (!nonIo || !nonIo->nodeset) return -1;
  int first = hwloc_bitmap_first(nonIo->nodeset);
  return first < 0 ? -1 : first;
}

class PciBuilder {
 public:
  PciBuilder(System& sys, int host, hwloc_topology_t t) : sys_(sys), host_(host), t_(t) {}

  // The node a device hangs from: its PCIe switch, or its NUMA node's CPU.
  // Root ports (bridges right below a host bridge) belong to the CPU. Below
  // them, PCI-PCI bridges alternate: a switch's upstream port, then its
  // downstream ports, which are merged into the switch's node.
  int parentOf(hwloc_obj_t dev, int numa) {
    std::vector<hwloc_obj_t> chain;
    for (hwloc_obj_t p = dev->parent; isPciPciBridge(p); p = p->parent) chain.push_back(p);
    int parent = cpuNodeForNuma(sys_, host_, numa);
    int depth = 0;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      hwloc_obj_t bridge = *it;
      bool rootPort = bridge->parent && bridge->parent->type == HWLOC_OBJ_BRIDGE && !isPciPciBridge(bridge->parent);
      if (rootPort) continue;
      if (depth++ % 2 == 1) continue;  // downstream port: same switch
      auto found = switches_.find(bridge);
      if (found != switches_.end()) {
        parent = found->second;
        continue;
      }
      Node sw;
      sw.kind = NodeKind::PciSwitch;
      sw.host = host_;
      sw.id = "sw" + std::to_string(switches_.size());
      sw.busId = busIdOf(bridge);
      sw.numa = numa;
      int idx = sys_.addNode(sw);
      if (parent >= 0) sys_.addLink(parent, idx, LinkKind::Pci, pciLinkBw(bridge));
      switches_[bridge] = idx;
      parent = idx;
    }
    return parent;
  }

 private:
  System& sys_;
  int host_;
  hwloc_topology_t t_;
  std::map<hwloc_obj_t, int> switches_;
};

void addCpus(System& sys, int host, hwloc_topology_t t) {
  int nNuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nNuma; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
    Node n;
    n.kind = NodeKind::Cpu;
    n.host = host;
    n.numa = static_cast<int>(numa->os_index);
    n.id = "cpu" + std::to_string(n.numa);
    n.cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, numa->cpuset, HWLOC_OBJ_CORE);
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, numa)) {
      n.package = static_cast<int>(pkg->os_index == static_cast<unsigned>(-1) ? pkg->logical_index : pkg->os_index);
      if (const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel")) n.name = model;
    }
    sys.addNode(n);
  }
  if (nNuma == 0) {
    // hwloc always shows one NUMA node; this guards odd builds.
    Node n;
    n.kind = NodeKind::Cpu;
    n.host = host;
    n.numa = 0;
    n.id = "cpu0";
    n.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    sys.addNode(n);
  }
  auto cpus = sys.nodesOf(NodeKind::Cpu, host);
  for (size_t i = 0; i < cpus.size(); ++i)
    for (size_t j = i + 1; j < cpus.size(); ++j) {
      const Node& a = sys.nodes[cpus[i]];
      const Node& b = sys.nodes[cpus[j]];
      bool samePackage = a.package >= 0 && a.package == b.package;
      sys.addLink(cpus[i], cpus[j], LinkKind::Smp, samePackage ? kSmpBwSamePackage : kSmpBwCrossPackage);
    }
}

}  // namespace

void detectHwloc(System& sys, int host) {
  Topology topo;
  hwloc_topology_t t = topo.t;
  addCpus(sys, host, t);
  PciBuilder pci(sys, host, t);

  for (hwloc_obj_t dev = hwloc_get_next_pcidev(t, nullptr); dev; dev = hwloc_get_next_pcidev(t, dev)) {
    unsigned cls = dev->attr->pcidev.class_id >> 8;
    bool gpu = cls == 0x03 && dev->attr->pcidev.vendor_id == kNvidiaVendor;
    bool nic = cls == 0x02;
    if (!gpu && !nic) continue;
    Node n;
    n.kind = gpu ? NodeKind::Gpu : NodeKind::Nic;
    n.host = host;
    n.id = nextId(sys, host, gpu ? "gpu" : "nic");
    n.busId = busIdOf(dev);
    n.numa = numaOf(t, dev);
    if (const char* model = hwloc_obj_get_info_by_name(dev, "PCIDevice")) n.name = model;
    for (hwloc_obj_t os = dev->io_first_child; os; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name) continue;
      if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && n.netdev.empty()) n.netdev = os->name;
      if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && n.ibDevice.empty()) n.ibDevice = os->name;
    }
    int parent = pci.parentOf(dev, n.numa);
    int idx = sys.addNode(n);
    if (parent >= 0) sys.addLink(parent, idx, LinkKind::Pci, pciLinkBw(dev));
  }
}

}  // namespace detail

System detectLocal(const DetectOptions& opts) {
  System sys;
  std::string name = opts.hostName;
  if (name.empty()) {
    char buf[HOST_NAME_MAX + 1] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) snprintf(buf, sizeof buf, "localhost");
    name = buf;
  }
  std::replace(name.begin(), name.end(), '/', '_');
  if (name == "net") name = "net-host";
  int host = sys.addHost(name);
  detail::detectHwloc(sys, host);
  detail::detectIbPorts(sys, host, opts.sysRoot);
  detail::detectNetInterfaces(sys, host, opts.sysRoot);
  if (opts.gpus && !detail::detectNvmlGpus(sys, host))
    WEFT_INFO(kGraph, "topology: NVML not available, GPUs known from PCI only");
  WEFT_INFO(kGraph, "topology: detected %zu nodes and %zu links on %s", sys.nodes.size(), sys.links.size(),
            name.c_str());
  return sys;
}

System systemFromEnv() {
  System sys;
  if (auto file = settings::get(settings::kTopoFile)) {
    sys = loadFile(*file);
    WEFT_INFO(kGraph, "topology: loaded %s (%zu hosts, %zu nodes)", file->c_str(), sys.hosts.size(),
              sys.nodes.size());
  } else {
    sys = detectLocal();
  }
  if (auto dump = settings::get(settings::kTopoDumpFile)) {
    dumpFile(sys, *dump);
    WEFT_INFO(kGraph, "topology: written to %s", dump->c_str());
  }
  return sys;
}

// The local topology as communicators use it, once per process (per file).
int hostNamed(const System& sys, const std::string& hostName) {
  for (size_t h = 0; h < sys.hosts.size(); ++h)
    if (sys.hosts[h] == hostName) return static_cast<int>(h);
  return 0;
}

LocalTopology localTopology() {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const System>> cache;  // "" = detected
  const std::string file = settings::get(settings::kTopoFile).value_or("");
  std::shared_ptr<const System> sys;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(file);
    if (it == cache.end()) {
      System s = file.empty() ? detectLocal() : loadFile(file);
      if (!file.empty())
        WEFT_INFO(kGraph, "topology: loaded %s (%zu hosts, %zu nodes)", file.c_str(), s.hosts.size(), s.nodes.size());
      it = cache.emplace(file, std::make_shared<const System>(std::move(s))).first;
    }
    sys = it->second;
  }
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = 0;
  return {sys, hostNamed(*sys, name), file.empty() ? "detected" : file};
}

int currentNumaNode() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return -1;
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int numa = -1;
  while (dirent* e = readdir(d))
    if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
      numa = atoi(e->d_name + 4);
      break;
    }
  closedir(d);
  return numa;
}

}  // namespace weft::topo
