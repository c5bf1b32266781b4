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
  const bool peerToPeer = s.intraType == PathType::Nvl || s.intraType == PathType::Pix || s.intraType == PathType::Pxb;
  // Inside a host the chains' own links, not the NIC's speed (inter has it):
  // a slow NIC capping the intra term too would charge the double tree's and
  // hier's host phases at the network's pace.
  const double hostTotal = s.ringHostBwPerChannel > 0 ? s.ringHostBwPerChannel * std::max(s.nChannels, 1) : ringTotal;
  c.intra.bandwidthGBs = peerToPeer ? hostTotal : std::min(hostTotal, measured.intra.bandwidthGBs);
  if (s.nHosts > 1 && s.interHostBw > 0) {
    c.inter.bandwidthGBs = std::min(s.interHostBw * std::max(s.nChannels, 1), ringTotal);
    c.treeNetScale = algo::doubleTreeNetScale(s.hostNicBw);
  }
  // Where a channel has a path of its own (GPU peer links, a NIC per
  // channel), one channel carries only its share; on one host's shared
  // memory one executor thread does every channel's copies (0: no limit).
  if (peerToPeer || s.nHosts > 1) c.channelBwGBs = s.nHosts > 1 && s.interHostBw > 0 ? std::min(s.interHostBw, s.ringBwPerChannel) : s.ringBwPerChannel;
  return c;
}

}  // namespace weft::topo
