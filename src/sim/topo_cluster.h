// A weft topology file (docs/topology.md) as weft-sim's cluster. The file's
// hosts, GPUs, NICs (speed_gbps, their net links) and network switches
// (switch-to-switch links: a top-of-rack switch's uplink to a spine; its
// bandwidth below the sum of the NICs beneath it is the oversubscription)
// give the links; an optional top-level "simulation" member gives what a
// topology file does not say:
//
//   "simulation": {
//     "ranks_per_host": 8,          // or one count per host; default: GPUs per host
//     "step_us": 2,                 // per-step overhead (executor hand-off)
//     "intra_gbs": 6,               // a rank's link inside its host (default: its GPU's
//                                   // NVLink, else PCI link; required for hosts without GPUs)
//     "intra_latency_us": 0.6,      // default: the GPU link's latency class
//     "net_hop_latency_us": 1.5,    // per network link crossed (default: its latency class)
//     "degraded": [{"host": "node7", "fraction": 0.3, "latency_us": 20}]
//                                   // NICs of that host ("*": all) at a fraction of their
//                                   // speed, plus latency: RoCE falling back to TCP
//   }
//
// Errors name the field: unknown members, a host whose NICs reach no switch
// or not the others, zero bandwidth, more ranks than GPUs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/sim/cluster.h"
#include "src/topology/comm_topo.h"
#include "src/topology/rings.h"

namespace weft::sim {

struct TopoCluster {
  Cluster cluster;
  std::vector<int> layout;  // ranks per host
  std::vector<std::string> hostNames;
  // What the cost model sees (CostInputs): the slowest rank link inside a
  // host, the slowest NIC, the fewest NICs per host, and latencies.
  SimpleCluster summary;
  // The file's graph, each rank's place on it (GPU of the same index, else a
  // CPU node) and each host's description without its name (hosts described
  // alike have the same chains): what the communicator's ring orders need.
  std::shared_ptr<const topo::System> system;
  std::vector<topo::RankPlace> places;
  std::vector<std::string> hostKeys;
};

// Per channel, the ring order a communicator of nChannels channels would
// give its calls on this cluster (topo::hostRingViews per host, composed by
// topo::composeRings, as the communicator does at init): each host's chain
// enters and leaves at the devices nearest that channel's NIC.
std::vector<std::vector<int>> communicatorRingOrders(const TopoCluster& t, int nChannels);
// The same with the summary the communicator prices its calls from
// (topo::costInputsFromTopology); no orders when the cluster has no places.
topo::CommRings communicatorRings(const TopoCluster& t, int nChannels);

TopoCluster topoClusterFromString(const std::string& text);
// Errors carry the path.
TopoCluster loadTopoCluster(const std::string& path);

}  // namespace weft::sim
