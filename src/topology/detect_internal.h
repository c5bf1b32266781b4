// The detection steps detect.cc runs in order; each adds to one host of sys.
#pragma once

#include <string>

#include "src/topology/graph.h"

namespace weft::topo::detail {

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

}  // namespace weft::topo::detail
