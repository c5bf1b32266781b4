#include "src/topology/gpu_nic.h"

namespace weft::topo {

std::optional<PathType> gpuNicPath(const System& sys, int host, int cudaDev, const std::string& ibDevice, int port) {
  int gpu = -1, nic = -1;
  for (int g : sys.nodesOf(NodeKind::Gpu, host))
    if (sys.nodes[g].cudaDev == cudaDev) gpu = g;
  for (int n : sys.nodesOf(NodeKind::Nic, host))
    if (sys.nodes[n].ibDevice == ibDevice && sys.nodes[n].port == port) nic = n;
  if (gpu < 0 || nic < 0) return std::nullopt;
  const Path p = findPath(sys, gpu, nic);
  if (p.type == PathType::Dis) return std::nullopt;
  return p.type;
}

}  // namespace weft::topo
