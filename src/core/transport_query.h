// Which host transport joins this rank to each peer, and why: the same
// choice the connection table makes (Connections::hostChoice), asked
// without connecting and without logging. Internal C++ for tools
// (weft-doctor), which must not parse log lines to learn it.
#pragma once

#include <string>
#include <vector>

struct weftComm;

namespace weft {

struct PeerTransport {
  int peer = -1;
  std::string transport;  // the registry's name ("SHM", "IB", "Socket"); "" when none can join the pair
  std::string why;        // the reasons of the transports passed over, then the chosen one's
  bool sameHost = false;  // the two ranks share a host (host index)
  bool network = false;   // the chosen transport joins hosts
  bool lastResort = false;  // the chosen transport is the registry's last resort (TCP)
  bool forced = false;      // WEFT_NET named the chosen transport
};

// One row per other rank of `comm`, in rank order. Raises weftInvalidArgument
// for a communicator that is not initialised.
std::vector<PeerTransport> peerTransports(const weftComm* comm);

}  // namespace weft
