// Which transport connects two ranks: a pure function of what both ends
// know (their shared peer infos, the topology of their host, the
// environment), so both reach the same decision without talking.
#pragma once

#include <string>

#include "src/topology/comm_topo.h"

namespace weft::topo {

enum class Route { Shm, Socket, Ib };
const char* toString(Route r);

struct RouteQuery {
  bool sameHost = false;
  bool shmDisabled = false;  // WEFT_SHM_DISABLE
  bool forceSocket = false;  // WEFT_NET=Socket
  bool forceIb = false;      // WEFT_NET=IB
  bool selfIb = false;       // this rank has a usable IB/RoCE port
  bool peerIb = false;       // the peer has one
  std::string selfIbProblem;  // why this rank has none (for the log)
  int peer = -1;
  // What the topology says the pair could use (Unknown without one).
  PeerTopoKind topoKind = PeerTopoKind::Unknown;
};

struct RouteDecision {
  Route route = Route::Socket;
  std::string why;          // "same host", "hosts differ, no usable IB on rank 3", ...
  bool ibFallback = false;  // between hosts over sockets although not forced: worth a warning
  bool impossible = false;  // WEFT_NET=IB but IB cannot be used: an error
};

// Same host (and shm allowed) -> SHM; P2P-capable GPU pairs also use SHM
// for host buffers, said in `why`. Else IB when both ends have it and
// sockets are not forced; else Socket.
RouteDecision chooseRoute(const RouteQuery& q);

// How device-buffer traffic between two ranks moves.
enum class DevicePath {
  Host,  // the pair's host connection, its FIFO mapped for the GPU
  P2p,   // p2p FIFOs in GPU memory (GPUs of one host that reach each other)
  Ib,    // IB connections of their own; each end puts its slots in GPU
         // memory when it can do GPUDirect RDMA, else in host memory
};
const char* toString(DevicePath p);

struct DevicePathDecision {
  DevicePath path = DevicePath::Host;
  std::string why;  // for the connection log line, as seen from this end
};

// p2p: the two GPUs reach each other (p2p transport's canConnect);
// hostRoute: what chooseRoute gave the pair; selfGdr/peerGdr: whether each
// end's device traffic over IB could use GPUDirect RDMA (PeerInfo.gdrMode).
// IB gets device connections of its own when at least one end can: the
// other end then stages, but the first still saves its copy over PCIe.
// The path (not `why`) is the same whichever end asks.
DevicePathDecision chooseDevicePath(bool p2p, Route hostRoute, bool selfGdr, bool peerGdr);

}  // namespace weft::topo
