#include "src/core/connections.h"

#include <algorithm>
#include <set>
#include <strings.h>

#include "src/core/comm.h"
#include "src/topology/route.h"
#include "transports/ib/gdr_log.h"
#include "transports/ib/ib_transport.h"
#include "transports/p2p/p2p_transport.h"
#include "src/util/env.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

Connections::Connections(weftComm* comm) : comm_(comm) {
  ctx_.bootstrap = comm->bootstrap.get();
  ctx_.rank = comm->rank;
  ctx_.nranks = comm->nranks;
  ctx_.peers = &comm->peers;
  ctx_.geometry = comm->geometry;
  ctx_.localBell = comm->bell;
  ctx_.peerBells = &comm->peerBells;
  ctx_.secret = comm->bootstrap->secret();
  ctx_.timeoutMs = comm->timeoutMs;
  ctx_.oversubscribed = comm->oversubscribed;
  ctx_.abortFlag = &comm->aborting;
  ctx_.onAsyncError = [comm](weftResult_t code, const std::string& why) { comm->setAsyncError(code, why); };
  shm_ = makeShmTransport();
  socket_ = makeSocketTransport();
  ib_ = makeIbTransport();
  p2p_ = makeP2pTransport();
  ibDevice_ = makeIbDeviceTransport(comm->gdr, comm->cudaDev);
}

Connections::~Connections() = default;

// Both ends must reach the same answer, so the choice only uses what both
// know: the two PeerInfos, the topology of their host (same file or the
// same detection on both) and the environment (which must agree across
// ranks). The decision itself is topo::chooseRoute, unit-tested there.
topo::RouteQuery Connections::routeQuery(int peer) const {
  const PeerInfo& me = ctx_.self();
  const PeerInfo& other = ctx_.peer(peer);
  topo::RouteQuery q;
  q.sameHost = me.hostHash == other.hostHash;
  q.shmDisabled = envBool("WEFT_SHM_DISABLE", false);
  q.forceSocket = !strcasecmp(comm_->netName.c_str(), "Socket");
  q.forceIb = !strcasecmp(comm_->netName.c_str(), "IB");
  q.selfIb = me.ibUsable;
  q.peerIb = other.ibUsable;
  q.peer = peer;
  if (peer < static_cast<int>(comm_->peerTopoKind.size())) q.topoKind = comm_->peerTopoKind[peer];
  return q;
}

Transport* Connections::choose(int peer, std::string* why) {
  const PeerInfo& me = ctx_.self();
  topo::RouteQuery q = routeQuery(peer);
  if (!q.selfIb) q.selfIbProblem = ibUnusableReason();
  topo::RouteDecision d = topo::chooseRoute(q);
  *why = d.why;
  if (d.impossible)
    raise(weftInvalidUsage, "network forced to IB but rank %d cannot reach rank %d over IB (%s)", me.rank, peer,
          d.why.c_str());
  if (d.ibFallback && !warnedFallback_) {
    warnedFallback_ = true;
    WEFT_WARN("rank %d: using the socket transport between hosts, not RDMA: %s", me.rank, d.why.c_str());
  }
  switch (d.route) {
    case topo::Route::Shm: return shm_.get();
    case topo::Route::Ib: return ib_.get();
    case topo::Route::Socket: break;
  }
  return socket_.get();
}

bool Connections::deviceP2p(int peer, std::string* why) const {
  return !envBool("WEFT_P2P_DISABLE", false) && p2p_->canConnect(ctx_, peer, why);
}

// Both ends reach the same path: p2p's answer, the route and the two
// PeerInfo.gdrMode values are shared facts.
Connections::DeviceRoute Connections::deviceRoute(int peer) const {
  DeviceRoute r;
  std::string p2pWhy;
  const bool p2p = deviceP2p(peer, &p2pWhy);
  r.hostRoute = p2p ? topo::Route::Shm : topo::chooseRoute(routeQuery(peer)).route;
  topo::DevicePathDecision d =
      topo::chooseDevicePath(p2p, r.hostRoute, ctx_.self().gdrMode != 0, ctx_.peer(peer).gdrMode != 0);
  r.path = d.path;
  r.why = p2p ? p2pWhy : d.why;
  return r;
}

bool Connections::ownDeviceEdge(int peer, int conn, bool sending) {
  DeviceRoute r = deviceRoute(peer);
  if (r.path == topo::DevicePath::Host && r.hostRoute == topo::Route::Ib &&
      stagedLogged_.insert({peer, conn, sending}).second)
    ib::logDeviceEdge(comm_->rank, peer, sending, comm_->gdr);
  return r.path != topo::DevicePath::Host;
}

void Connections::connectEdges(std::vector<Edge> edges) {
  std::sort(edges.begin(), edges.end());
  for (const Edge& e : edges) {
    const bool sending = e.sender == comm_->rank;
    const int peer = sending ? e.receiver : e.sender;
    auto& table = sending ? sends_ : recvs_;
    if (table.count({peer, e.conn, e.device})) continue;
    std::string why;
    Transport* t = nullptr;
    if (e.device) {
      DeviceRoute r = deviceRoute(peer);
      if (r.path == topo::DevicePath::Host)
        raise(weftInternalError, "device edge to rank %d has no connection of its own", peer);
      t = r.path == topo::DevicePath::P2p ? p2p_.get() : ibDevice_.get();
      why = r.why;
    } else {
      t = choose(peer, &why);
    }
    const uint64_t tag = kTagConnect | (uint64_t(e.device) << 52) | (uint64_t(e.conn) << 44) |
                         (uint64_t(e.sender) << 22) | uint64_t(e.receiver);
    std::unique_ptr<Connection> c = sending ? t->connectSend(ctx_, peer, tag) : t->connectRecv(ctx_, peer, tag);
    WEFT_INFO(kInit, "conn %d%s : %d -> %d via %s: %s", e.conn, e.device ? " (device)" : "", e.sender, e.receiver,
              c->describe().c_str(), why.c_str());
    table[{peer, e.conn, e.device}] = std::move(c);
  }
}

void Connections::ensure(const plan::Plan& p, bool device) {
  std::set<Edge> need;
  const int me = comm_->rank;
  for (const auto& ch : p.channels)
    for (const auto& st : ch.steps) {
      for (int i = 0; i < st.nSend; i++) {
        bool dev = device && ownDeviceEdge(st.sendPeer[i], st.conn, true);
        if (!sends_.count({st.sendPeer[i], st.conn, dev})) need.insert({me, st.sendPeer[i], st.conn, dev});
      }
      for (int i = 0; i < st.nRecv; i++) {
        bool dev = device && ownDeviceEdge(st.recvPeer[i], st.conn, false);
        if (!recvs_.count({st.recvPeer[i], st.conn, dev})) need.insert({st.recvPeer[i], me, st.conn, dev});
      }
    }
  if (!need.empty()) connectEdges({need.begin(), need.end()});
}

void Connections::ensureRing(const std::vector<int>& order, int nChannels) {
  const int n = static_cast<int>(order.size());
  if (n < 2) return;
  int pos = static_cast<int>(std::find(order.begin(), order.end(), comm_->rank) - order.begin());
  int next = order[(pos + 1) % n], prev = order[(pos + n - 1) % n];
  std::vector<Edge> edges;
  for (int c = 0; c < nChannels; c++) {
    edges.push_back({comm_->rank, next, c});
    edges.push_back({prev, comm_->rank, c});
  }
  connectEdges(edges);
}

// Device traffic uses the peer's own device connection (p2p, or IB with
// GPUDirect RDMA) when one exists, else the host connection.
const Connection* Connections::find(const std::map<Key, std::unique_ptr<Connection>>& table, int peer, int conn,
                                    bool device) const {
  if (device)
    if (auto it = table.find({peer, conn, true}); it != table.end()) return it->second.get();
  auto it = table.find({peer, conn, false});
  return it == table.end() ? nullptr : it->second.get();
}

FifoEnd Connections::send(int peer, int conn, bool device) const {
  const Connection* c = find(sends_, peer, conn, device);
  if (!c) raise(weftInternalError, "no connection to rank %d (conn %d)", peer, conn);
  return c->fifo();
}

FifoEnd Connections::recv(int peer, int conn, bool device) const {
  const Connection* c = find(recvs_, peer, conn, device);
  if (!c) raise(weftInternalError, "no connection from rank %d (conn %d)", peer, conn);
  return c->fifo();
}

}  // namespace weft
