#include "src/core/transport_query.h"

#include "src/core/comm.h"
#include "src/core/connections.h"
#include "src/util/error.h"
#include "transports/registry.h"

namespace weft {

std::vector<PeerTransport> peerTransports(const weftComm* comm) {
  if (!comm || !comm->connections)
    raise(weftInvalidArgument, "peerTransports: the communicator has no connection table (not initialised)");
  std::vector<PeerTransport> rows;
  const auto& list = hostTransportList();
  for (int peer = 0; peer < comm->nranks; peer++) {
    if (peer == comm->rank) continue;
    const TransportChoice c = comm->connections->hostChoice(peer);
    PeerTransport row;
    row.peer = peer;
    row.why = c.why;
    row.sameHost = comm->hostOf[static_cast<size_t>(peer)] == comm->hostOf[static_cast<size_t>(comm->rank)];
    if (c.index >= 0) {
      const TransportEntry& e = list[static_cast<size_t>(c.index)];
      row.transport = e.name;
      row.network = e.network;
      row.lastResort = e.lastResort;
      row.forced = *c.forced && row.transport == c.forced;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace weft
