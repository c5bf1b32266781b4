// The local host's topology as communicators use it: loaded from
// WEFT_TOPO_FILE or detected, once per process (per file name), since
// detection walks hwloc and sysfs and every communicator needs the same.
#pragma once

#include <memory>
#include <string>

#include "src/topology/graph.h"

namespace weft::topo {

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

}  // namespace weft::topo
