// Paths between two nodes of a System: the widest route (largest bottleneck
// bandwidth, then fewest hops) and its type, from closest to farthest:
//   LOC  same node                    NVL  NVLink only (direct or via NVSwitch)
//   PIX  through at most one PCI switch, no CPU
//   PXB  through several PCI switches, no CPU
//   PHB  through a CPU's host bridge  SYS  across the SMP link between NUMA nodes
//   NET  through the network          DIS  no route
#pragma once

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

}  // namespace weft::topo
