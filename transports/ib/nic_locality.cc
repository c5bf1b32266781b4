#include "transports/ib/nic_locality.h"

namespace weft::ib {

std::optional<PciDistance> pciDistanceOf(topo::PathType t) {
  switch (t) {
    case topo::PathType::Loc:
    case topo::PathType::Nvl: return PciDistance::Loc;
    case topo::PathType::Pix: return PciDistance::Pix;
    case topo::PathType::Pxb: return PciDistance::Pxb;
    case topo::PathType::Phb: return PciDistance::Phb;
    case topo::PathType::Sys: return PciDistance::Sys;
    case topo::PathType::Net:
    case topo::PathType::Dis: break;
  }
  return std::nullopt;
}

namespace {

std::optional<PciDistance> numaDistance(const topo::System& sys, int host, int numaNode, const PortState& p) {
  if (numaNode < 0) return std::nullopt;
  for (int n : sys.nodesOf(topo::NodeKind::Nic, host)) {
    const topo::Node& nic = sys.nodes[n];
    if (nic.ibDevice != p.dev || nic.port != p.port) continue;
    if (nic.numa < 0) return std::nullopt;
    // The port hangs off this rank's CPU (its host bridge) or another's.
    return nic.numa == numaNode ? PciDistance::Phb : PciDistance::Sys;
  }
  return std::nullopt;
}

}  // namespace

NicDistances nicDistances(const topo::System* sys, int host, int cudaDev, int numaNode,
                          const std::vector<PortState>& ports) {
  NicDistances d;
  if (cudaDev >= 0)
    d.locality = "GPU " + std::to_string(cudaDev);
  else
    d.locality = numaNode >= 0 ? "NUMA node " + std::to_string(numaNode) : "no GPU, NUMA node unknown,";
  for (const PortState& p : ports) {
    std::optional<PciDistance> dist;
    if (sys && cudaDev >= 0) {
      auto path = topo::gpuNicPath(*sys, host, cudaDev, p.dev, p.port);
      if (path) dist = pciDistanceOf(*path);
    } else if (sys) {
      dist = numaDistance(*sys, host, numaNode, p);
    }
    d.distance.push_back(dist);
  }
  return d;
}

}  // namespace weft::ib
