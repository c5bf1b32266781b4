// Paths between two nodes of a System: the widest route (largest bottleneck
// bandwidth, then fewest hops) and its type, from closest to farthest:
//   LOC  same node                    NVL  NVLink only (direct or via NVSwitch)
//   PIX  through at most one PCI switch, no CPU
//   PXB  through several PCI switches, no CPU
//   PHB  through a CPU's host bridge  SYS  across the SMP link between NUMA nodes
//   NET  through the network          DIS  no route
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/topology/graph.h"

namespace weft::topo {

enum class PathType { Loc = 0, Nvl, Pix, Pxb, Phb, Sys, Net, Dis };
const char* toString(PathType t);

struct Hop {
  int link = -1;
  bool forward = true;  // traversed from link.a to link.b
};

struct Path {
  PathType type = PathType::Dis;
  double bw = 0;  // bottleneck, GB/s (kLocalBw for LOC; 0 for DIS)
  std::vector<Hop> hops;
  std::vector<int> nodes;  // from, ..., to
  double latencyUs = 0;    // sum of the hops' latency classes
};

// GPUs are endpoints only: data is not routed through a GPU. A path between
// two nodes of one host stays inside it.
Path findPath(const System& sys, int from, int to);

// All-pairs paths over a set of nodes, computed once.
class PathTable {
 public:
  PathTable(const System& sys, const std::vector<int>& nodes);
  const Path& get(int from, int to) const;

 private:
  std::vector<int> nodes_;
  std::vector<Path> paths_;
  int index(int node) const;
};

// How far a GPU is from an IB port on its host's PCI tree: what the
// GPUDirect RDMA decision weighs against WEFT_NET_GDR_LEVEL. The path type
// from the GPU with CUDA index cudaDev to the NIC node of (ibDevice, port),
// both on `host`; nullopt when either is not in the graph or no path joins
// them.
std::optional<PathType> gpuNicPath(const System& sys, int host, int cudaDev, const std::string& ibDevice, int port);

}  // namespace weft::topo
