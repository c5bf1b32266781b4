// Detecting the local machine into a System of one host.
#pragma once

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

}  // namespace weft::topo
