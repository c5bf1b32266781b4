// The communicator's connections: one per (peer, connection index,
// direction), built on first need by the transport chosen for that peer.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <mutex>
#include <utility>

#include "algorithms/plan.h"
#include "src/topology/route.h"
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
  // `device`: the plan runs on device buffers; edges between GPUs that can
  // reach each other then get p2p FIFOs in GPU memory of their own, edges
  // over IB where either end can do GPUDirect RDMA get IB connections of
  // their own (GPU slots), the others share the host FIFOs (the device
  // executor reaches those through mapped pinned memory).
  void ensure(const plan::Plan& plan, bool device = false);
  // Connects rank -> next and prev -> rank on connection indices
  // 0..nChannels-1 of a ring.
  void ensureRing(const std::vector<int>& order, int nChannels);

  FifoEnd send(int peer, int conn, bool device = false) const;
  FifoEnd recv(int peer, int conn, bool device = false) const;

 private:
  struct Edge {
    int sender, receiver, conn;
    bool device = false;
    auto operator<=>(const Edge&) const = default;
  };
  using Key = std::tuple<int, int, bool>;  // (peer, conn, device)
  void connectEdges(std::vector<Edge> edges);
  Transport* choose(int peer, std::string* why);
  // What both ends know about the pair, for topo::chooseRoute.
  topo::RouteQuery routeQuery(int peer) const;
  // Whether device-buffer traffic with `peer` goes over p2p (GPU memory).
  bool deviceP2p(int peer, std::string* why) const;
  struct DeviceRoute {
    topo::DevicePath path = topo::DevicePath::Host;
    topo::Route hostRoute = topo::Route::Socket;
    std::string why;
  };
  // How device-buffer traffic with `peer` moves (topo::chooseDevicePath).
  DeviceRoute deviceRoute(int peer) const;
  // Whether a device edge needs a connection of its own; says once per edge
  // when device traffic over IB is staged through the host connection.
  bool ownDeviceEdge(int peer, int conn, bool sending);
  const Connection* find(const std::map<Key, std::unique_ptr<Connection>>& table, int peer, int conn,
                         bool device) const;

  weftComm* comm_;
  ConnectContext ctx_;
  std::unique_ptr<Transport> shm_;
  std::unique_ptr<Transport> socket_;
  std::unique_ptr<Transport> ib_;
  std::unique_ptr<Transport> p2p_;
  std::unique_ptr<Transport> ibDevice_;  // device edges over IB with GPUDirect RDMA at either end
  bool warnedFallback_ = false;
  std::set<std::tuple<int, int, bool>> stagedLogged_;  // (peer, conn, sending)
  std::map<Key, std::unique_ptr<Connection>> sends_;
  std::map<Key, std::unique_ptr<Connection>> recvs_;
};

}  // namespace weft
