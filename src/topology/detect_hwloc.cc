// NUMA nodes, cores and the PCI tree from hwloc. GPUs (NVIDIA display
// class) and NICs (network class) become nodes; PCIe switches become
// PciSwitch nodes; other PCI devices (storage, ...) are left out.
#include <hwloc.h>

#include <cstdio>
#include <map>

#include "src/topology/detect_internal.h"
#include "src/util/error.h"

namespace weft::topo::detail {

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

}  // namespace weft::topo::detail
