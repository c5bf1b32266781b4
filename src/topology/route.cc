#include "src/topology/route.h"

namespace weft::topo {

const char* toString(Route r) {
  switch (r) {
    case Route::Shm: return "SHM";
    case Route::Socket: return "NET/Socket";
    case Route::Ib: return "NET/IB";
  }
  return "?";
}

RouteDecision chooseRoute(const RouteQuery& q) {
  RouteDecision d;
  if (q.shmDisabled) {
    d.why = "WEFT_SHM_DISABLE=1";
  } else if (q.sameHost) {
    d.route = Route::Shm;
    d.why = "same host";
    // There is no GPU peer-to-peer transport for host buffers yet; say so
    // where the topology would have allowed one.
    if (q.topoKind == PeerTopoKind::P2p) d.why += " (GPUs P2P-capable; host buffers go through shared memory)";
    return d;
  } else {
    d.why = "hosts differ";
  }
  if (!q.forceSocket && q.selfIb && q.peerIb) {
    d.route = Route::Ib;
    d.why += ", IB on both ends";
    return d;
  }
  const std::string reason = q.forceSocket ? "network forced to Socket"
                             : !q.selfIb   ? "no usable IB on this rank: " + q.selfIbProblem
                                           : "no usable IB on rank " + std::to_string(q.peer);
  d.route = Route::Socket;
  d.impossible = q.forceIb;
  d.ibFallback = !q.forceSocket;
  d.why += ", " + reason;
  return d;
}

const char* toString(DevicePath p) {
  switch (p) {
    case DevicePath::Host: return "host connection";
    case DevicePath::P2p: return "P2P";
    case DevicePath::Ib: return "NET/IB device connection";
  }
  return "?";
}

DevicePathDecision chooseDevicePath(bool p2p, Route hostRoute, bool selfGdr, bool peerGdr) {
  if (p2p) return {DevicePath::P2p, "GPUs reach each other"};
  if (hostRoute != Route::Ib) return {DevicePath::Host, "no GPU peer access, not over IB"};
  if (selfGdr && peerGdr) return {DevicePath::Ib, "GPU Direct RDMA at both ends"};
  if (selfGdr) return {DevicePath::Ib, "GPU Direct RDMA at this end"};
  if (peerGdr) return {DevicePath::Ib, "GPU Direct RDMA at the peer's end"};
  return {DevicePath::Host, "no GPU Direct RDMA at either end"};
}

}  // namespace weft::topo
