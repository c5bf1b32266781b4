// Which transport connects two ranks: a pure function of what both ends
// know (their shared peer infos, the topology of their host, the
// environment), so both reach the same decision without talking.
#pragma once

#include <string>

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
  // transportFor() of the two ranks' places on their host ("p2p", "shm",
  // "net"), or "" when the topology is unknown.
  std::string topoKind;
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

}  // namespace weft::topo
