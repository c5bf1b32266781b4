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
#include <vector>

#include "algorithms/plan.h"
#include "transports/registry.h"
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
  // `device`: the plan runs on device buffers; edges a device transport can
  // join (GPUs that reach each other: p2p FIFOs in GPU memory; IB where
  // either end can do GPUDirect RDMA) get connections of their own, the
  // others share the host FIFOs (the device executor reaches those through
  // mapped pinned memory).
  void ensure(const plan::Plan& plan, bool device = false);

  // One direction of a pair on one connection index.
  struct Edge {
    int sender, receiver, conn;
    bool device = false;
    auto operator<=>(const Edge&) const = default;
  };
  // ensure() for host buffers, but the edges it connects stay temporary:
  // releaseTemporary() closes them again. An AllToAll over many ranks keeps
  // a bounded set of such edges between its calls (src/core/alltoall_batches.h).
  // Both ends of an edge must make and release it alike, each after both are
  // done with it. An ensure() of a plan that uses a temporary edge makes it
  // permanent at both ends (a later release leaves it open): a tree, a
  // point-to-point call or a device kernel may then be using it.
  void ensureTemporary(const plan::Plan& plan);
  void releaseTemporary(const plan::Plan& plan);
  // Connection ends this rank holds (both directions), for tests and logs.
  size_t size() const { return sends_.size() + recvs_.size(); }
  // Of those, the temporary ones, now and at most so far.
  size_t temporaryEnds() const { return temporary_.size(); }
  size_t peakTemporaryEnds() const { return peakTemporary_; }
  // Connection ends this rank has made since it started (a reconnect counts
  // again): what a cache of connections saves shows here.
  size_t endsMade() const { return endsMade_; }
  // The AllToAll distances whose temporary edges are connected, least
  // recently used first (src/core/alltoall_batches.h): the same at every
  // rank, kept here with the connections it describes.
  std::vector<int> allToAllHeld;
  // Whether every edge `plan` uses is connected already (a device call
  // inside CUDA graph capture must not connect anything).
  bool connectedFor(const plan::Plan& plan, bool device = false);
  // Connects rank -> next and prev -> rank on connection indices
  // 0..nChannels-1 of a ring.
  void ensureRing(const std::vector<int>& order, int nChannels);

  FifoEnd send(int peer, int conn, bool device = false) const;
  FifoEnd recv(int peer, int conn, bool device = false) const;

  // The host transports' choice for the pair (registry.h), made alike at
  // both ends from shared facts, whether or not the pair is connected yet;
  // quiet: choose() logs and raises. Also what tools ask (transport_query.h).
  TransportChoice hostChoice(int peer) const;

 private:
  using Key = std::tuple<int, int, bool>;  // (peer, conn, device)
  void connectEdges(std::vector<Edge> edges);
  std::set<Edge> missingEdges(const plan::Plan& plan, bool device);
  // The edges `plan` uses, connected or not.
  std::set<Edge> edgesOf(const plan::Plan& plan, bool device);
  // The host transport for `peer`, and why; warns once per communicator on
  // a fallback to a last resort, raises when WEFT_NET cannot be honoured.
  Transport* choose(int peer, std::string* why);
  struct DeviceChoice {
    Transport* transport = nullptr;  // null: the host connection's FIFO, mapped for the GPU
    Transport* host = nullptr;       // the pair's host transport (when asked)
    std::string why;
  };
  // How device-buffer traffic with `peer` moves: the first device transport
  // that can join the pair, else the device transport of its host
  // transport when that one can, else the host FIFO.
  DeviceChoice deviceChoice(int peer) const;
  // Whether a device edge needs a connection of its own; has the host
  // transport say once per edge when device traffic that could have had
  // one goes through the host connection.
  bool ownDeviceEdge(int peer, int conn, bool sending);
  const Connection* find(const std::map<Key, std::unique_ptr<Connection>>& table, int peer, int conn,
                         bool device) const;

  weftComm* comm_;
  ConnectContext ctx_;
  TransportSet& transports_;  // the communicator's, made at init
  bool warnedFallback_ = false;
  std::set<std::tuple<int, int, bool>> stagedLogged_;  // (peer, conn, sending)
  std::map<Key, std::unique_ptr<Connection>> sends_;
  std::map<Key, std::unique_ptr<Connection>> recvs_;
  std::set<Edge> temporary_;  // made by ensureTemporary, neither released nor made permanent
  size_t peakTemporary_ = 0;
  size_t endsMade_ = 0;
};

}  // namespace weft
