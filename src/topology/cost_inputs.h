// The cost model's link parameters from the topology. Bandwidths come from
// the graph; latencies stay the measured ones (the graph's latency classes
// are nominal, the transports' software overhead dominates them).
#pragma once

#include "algorithms/cost_model.h"
#include "src/topology/rings.h"

namespace weft::topo {

// measured: the transports' measured parameters (defaultCostInputs()).
//  - inter.bandwidthGBs: on several hosts, the NICs the rings use
//    (slowest NIC x channels), but never more than the rings get in total
//    (ringBwPerChannel x channels); kept when no NIC is known.
//  - intra.bandwidthGBs: the rings' total inside the hosts (their chains and
//    NIC legs, not the NIC's speed: TopoSummary::ringHostBwPerChannel); capped by the measured shared
//    memory bandwidth where ranks run on CPU nodes (the CPU copies every
//    byte); GPU ranks, peer-to-peer or through host memory, get their paths'
//    links (PCIe, NVLink, the sockets' link).
//  - latencies, nranks: measured and given.
algo::CostInputs costInputsFromTopology(const TopoSummary& s, int nranks, const algo::CostInputs& measured);

}  // namespace weft::topo
