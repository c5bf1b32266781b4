// The local machine's topology: detected into a System of one host, or
// loaded from WEFT_TOPO_FILE, once per process for communicators.
#pragma once

#include <memory>
#include <string>

#include "src/topology/graph.h"

namespace weft::topo {

struct DetectOptions {
  std::string sysRoot = "/sys";  // tests point this at a fake sysfs tree
  bool gpus = true;              // ask NVML (when its library loads)
  std::string hostName;          // empty: gethostname()
};

// hwloc (NUMA, cores, PCI tree, GPUs and NICs as PCI devices), OS network
// interfaces (getifaddrs + sysfs), InfiniBand/RoCE ports (sysfs) and NVIDIA
// GPUs with NVLink (NVML, loaded at run time if present).
System detectLocal(const DetectOptions& opts = {});

// The topology a communicator uses: WEFT_TOPO_FILE if set, else detection;
// written to WEFT_TOPO_DUMP_FILE when that is set.
System systemFromEnv();

// The local host's topology as communicators use it: loaded from
// WEFT_TOPO_FILE or detected, once per process (per file name), since
// detection walks hwloc and sysfs and every communicator needs the same.
struct LocalTopology {
  std::shared_ptr<const System> system;
  int host = 0;        // this process's host in *system
  std::string source;  // the file it came from, or "detected"
};

// Thread-safe; errors (unreadable or bad file) throw weft::Error.
LocalTopology localTopology();

// The host of sys named hostName, else 0 (a multi-host file used on a
// machine of another name stands for its first host).
int hostNamed(const System& sys, const std::string& hostName);

// The NUMA node of the CPU the calling thread runs on, -1 when unknown.
int currentNumaNode();

// The detection steps detectLocal runs in order; each adds to one host of
// sys. Declared here for the detection files and their tests.
namespace detail {

void detectHwloc(System& sys, int host);
// InfiniBand/RoCE ports from <sysRoot>/class/infiniband.
void detectIbPorts(System& sys, int host, const std::string& sysRoot);
// Interfaces from getifaddrs and <sysRoot>/class/net.
void detectNetInterfaces(System& sys, int host, const std::string& sysRoot);
// NVIDIA GPUs through NVML; returns false when NVML is not usable.
bool detectNvmlGpus(System& sys, int host);

// Shared helpers.
std::string readSysfs(const std::string& path);  // trimmed content, "" if unreadable
std::string pciBusIdOfLink(const std::string& devicePath);  // basename of the symlink target
std::string nextId(const System& sys, int host, const char* prefix);
int cpuNodeForNuma(const System& sys, int host, int numa);  // that NUMA's CPU node, else the first
int attachToCpu(System& sys, int node, int numa, LinkKind kind, double bw);

}  // namespace detail
}  // namespace weft::topo
