// How far each usable IB port is from one rank: the input of chooseNics
// (nic_choice.h), read from a topology graph (detected or WEFT_TOPO_FILE).
// A rank with a GPU measures from the GPU on the PCI tree; a rank without
// one from the NUMA node it runs on (the port's NUMA node equal: PHB,
// different: SYS). Whatever the graph cannot place is nullopt.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/topology/graph.h"
#include "src/topology/paths.h"
#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_select.h"

namespace weft::ib {

// LOC/NVL -> LOC, PIX, PXB, PHB, SYS; NET and DIS -> nullopt.
std::optional<PciDistance> pciDistanceOf(topo::PathType t);

struct NicDistances {
  std::vector<std::optional<PciDistance>> distance;  // one per port, in order
  std::string locality;                              // "GPU 1", "NUMA node 0", "no GPU, NUMA node unknown"
};

// sys may be null (no topology): every distance is then unknown.
NicDistances nicDistances(const topo::System* sys, int host, int cudaDev, int numaNode,
                          const std::vector<PortState>& ports);

}  // namespace weft::ib
