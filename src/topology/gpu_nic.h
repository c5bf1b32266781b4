// How far a GPU is from an IB port on its host's PCI tree: what the
// GPUDirect RDMA decision weighs against WEFT_NET_GDR_LEVEL.
#pragma once

#include <optional>
#include <string>

#include "src/topology/graph.h"
#include "src/topology/paths.h"

namespace weft::topo {

// The path type from the GPU with CUDA index cudaDev to the NIC node of
// (ibDevice, port), both on `host`; nullopt when either is not in the graph
// or no path joins them.
std::optional<PathType> gpuNicPath(const System& sys, int host, int cudaDev, const std::string& ibDevice, int port);

}  // namespace weft::topo
