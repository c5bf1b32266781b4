// The communicator's connections: one per (peer, connection index,
// direction), built on first need by the transport chosen for that peer.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "algorithms/plan.h"
#include "transports/transport.h"

struct weftComm;

namespace weft {

class Connections {
 public:
  explicit Connections(weftComm* comm);
  ~Connections();

  // Connects every edge `plan` uses that is not connected yet. Both ends of
  // an edge must call this for plans that use it; edges are handled in one
  // global order (sender, receiver, conn) so that no two ranks wait on each
  // other in a cycle.
  void ensure(const plan::Plan& plan);
  // Connects rank -> next and prev -> rank on connection indices
  // 0..nChannels-1 of a ring.
  void ensureRing(const std::vector<int>& order, int nChannels);

  FifoEnd send(int peer, int conn) const;
  FifoEnd recv(int peer, int conn) const;

 private:
  struct Edge {
    int sender, receiver, conn;
    auto operator<=>(const Edge&) const = default;
  };
  void connectEdges(std::vector<Edge> edges);
  Transport* choose(int peer, std::string* why);

  weftComm* comm_;
  ConnectContext ctx_;
  std::unique_ptr<Transport> shm_;
  std::unique_ptr<Transport> socket_;
  std::unique_ptr<Transport> ib_;
  bool warnedFallback_ = false;
  std::map<std::pair<int, int>, std::unique_ptr<Connection>> sends_;  // (peer, conn)
  std::map<std::pair<int, int>, std::unique_ptr<Connection>> recvs_;
};

}  // namespace weft
