// NVIDIA GPUs and NVLink through NVML, opened with dlopen so the library
// neither links nor needs the driver: without libnvidia-ml.so.1 (or without
// a GPU) this step reports false and GPUs stay as hwloc saw them.
// The few NVML declarations below follow NVML's documented C ABI.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "src/topology/detect_internal.h"
#include "src/util/log.h"

namespace weft::topo::detail {

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

  // NVLink: links per remote GPU, or per NVSwitch (all switches of a host
  // are one NvSwitch node: any GPU reaches any other through them).
  int nvswitch = -1;
  for (unsigned i = 0; i < n; ++i) {
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
