#include "src/topology/cost_inputs.h"

#include <algorithm>

#include "algorithms/double_tree.h"

namespace weft::topo {

algo::CostInputs costInputsFromTopology(const TopoSummary& s, int nranks, const algo::CostInputs& measured) {
  algo::CostInputs c = measured;
  c.nranks = nranks;
  c.nHosts = std::max(s.nHosts, 1);
  const double ringTotal = s.ringBwPerChannel * std::max(s.nChannels, 1);
  if (ringTotal <= 0) return c;  // disconnected or empty: the graph says nothing usable
  // Inside a host the chains' own links, not the NIC's speed (inter has it):
  // a slow NIC capping the intra term too would charge the double tree's and
  // hier's host phases at the network's pace. GPU ranks move their bytes
  // with their own kernels, also between GPUs that are not peer-to-peer
  // (through pinned host memory: up the sender's PCIe path, across the
  // sockets' link, down the receiver's), so the links on that path bound
  // them; only where the CPU copies (ranks on CPU nodes) does the measured
  // shared-memory bandwidth.
  const double hostTotal = s.ringHostBwPerChannel > 0 ? s.ringHostBwPerChannel * std::max(s.nChannels, 1) : ringTotal;
  c.intra.bandwidthGBs = s.hostMemoryRanks ? std::min(hostTotal, measured.intra.bandwidthGBs) : hostTotal;
  if (s.nHosts > 1 && s.interHostBw > 0) {
    c.inter.bandwidthGBs = std::min(s.interHostBw * std::max(s.nChannels, 1), ringTotal);
    c.treeNetScale = algo::doubleTreeNetScale(s.hostNicBw);
  }
  // Where a channel has a path of its own (a GPU's kernel per channel, a
  // NIC per channel), one channel carries only its share; where the CPU
  // copies on one host, one executor thread does every channel's copies
  // (0: no limit).
  if (!s.hostMemoryRanks || s.nHosts > 1) c.channelBwGBs = s.nHosts > 1 && s.interHostBw > 0 ? std::min(s.interHostBw, s.ringBwPerChannel) : s.ringBwPerChannel;
  return c;
}

}  // namespace weft::topo
