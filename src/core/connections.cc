#include "src/core/connections.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "src/core/comm.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

Connections::Connections(weftComm* comm) : comm_(comm), transports_(*comm->transports) {
  ctx_.bootstrap = comm->bootstrap.get();
  ctx_.rank = comm->rank;
  ctx_.nranks = comm->nranks;
  ctx_.peers = &comm->peers;
  ctx_.geometry = comm->geometry;
  ctx_.localBell = comm->bell;
  ctx_.peerBells = &comm->peerBells;
  ctx_.peerTopoKind = &comm->peerTopoKind;
  ctx_.secret = comm->bootstrap->secret();
  ctx_.timeoutMs = comm->timeoutMs;
  ctx_.oversubscribed = comm->oversubscribed;
  ctx_.ranksFillCores = comm->ranksFillCores;
  ctx_.abortFlag = &comm->aborting;
  ctx_.onAsyncError = [comm](weftResult_t code, const std::string& why) { comm->setAsyncError(code, why); };
}

Connections::~Connections() = default;

// Both ends must reach the same answer, so every transport's canConnect
// only uses what both know: the two PeerInfos, the topology of their host
// (same file or the same detection on both) and the environment (which
// must agree across ranks). The choice itself is chooseTransport,
// unit-tested with each transport's own decision.
TransportChoice Connections::hostChoice(int peer) const {
  const auto& host = transports_.host();
  return chooseTransport(hostTransportList(), comm_->netName, [&](size_t i, std::string* why) {
    return host[i].transport->canConnect(ctx_, peer, why);
  });
}

Transport* Connections::choose(int peer, std::string* why) {
  const int me = comm_->rank;
  TransportChoice c = hostChoice(peer);
  *why = c.why;
  if (c.impossible)
    raise(weftInvalidUsage, "network forced to %s but rank %d cannot reach rank %d over %s (%s)", c.forced, me, peer,
          c.forced, c.why.c_str());
  if (c.index < 0) raise(weftInternalError, "no transport can join rank %d and rank %d (%s)", me, peer, c.why.c_str());
  const TransportSet::Member& m = transports_.host()[c.index];
  if (c.warnFallback && !warnedFallback_) {
    warnedFallback_ = true;
    std::string name = m.entry->name;
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    WEFT_WARN("rank %d: using the %s transport between hosts, not RDMA: %s", me, name.c_str(), c.why.c_str());
  }
  return m.transport.get();
}

// Both ends reach the same answer: every device transport's canConnect and
// the host choice use shared facts.
Connections::DeviceChoice Connections::deviceChoice(int peer) const {
  DeviceChoice d;
  for (const TransportSet::Member& m : transports_.device())
    if (m.transport->canConnect(ctx_, peer, &d.why)) {
      d.transport = m.transport.get();
      return d;
    }
  TransportChoice c = hostChoice(peer);
  if (c.index < 0) return d;
  d.host = transports_.host()[c.index].transport.get();
  Transport* own = d.host->deviceTransport();
  if (own && own->canConnect(ctx_, peer, &d.why)) d.transport = own;
  return d;
}

bool Connections::ownDeviceEdge(int peer, int conn, bool sending) {
  DeviceChoice d = deviceChoice(peer);
  if (!d.transport && d.host && d.host->deviceTransport() && stagedLogged_.insert({peer, conn, sending}).second)
    d.host->noteDeviceTrafficStaged(ctx_, peer, sending);
  return d.transport != nullptr;
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
      DeviceChoice d = deviceChoice(peer);
      if (!d.transport) raise(weftInternalError, "device edge to rank %d has no connection of its own", peer);
      t = d.transport;
      why = d.why;
    } else {
      t = choose(peer, &why);
    }
    // connectTagConn (transports/transport.h) reads conn back from bits 44..51.
    const uint64_t tag = kTagConnect | (uint64_t(e.device) << 52) | (uint64_t(e.conn) << 44) |
                         (uint64_t(e.sender) << 22) | uint64_t(e.receiver);
    std::unique_ptr<Connection> c = sending ? t->connectSend(ctx_, peer, tag) : t->connectRecv(ctx_, peer, tag);
    WEFT_INFO(kInit, "conn %d%s : %d -> %d via %s: %s", e.conn, e.device ? " (device)" : "", e.sender, e.receiver,
              c->describe().c_str(), why.c_str());
    table[{peer, e.conn, e.device}] = std::move(c);
    ++endsMade_;
  }
}

void Connections::ensure(const plan::Plan& p, bool device) {
  std::set<Edge> need = missingEdges(p, device);
  if (!need.empty()) connectEdges({need.begin(), need.end()});
  if (temporary_.empty()) return;
  for (const Edge& e : edgesOf(p, device)) temporary_.erase(e);
}

void Connections::ensureTemporary(const plan::Plan& p) {
  std::set<Edge> need = missingEdges(p, false);
  if (need.empty()) return;
  // Marked before connecting, so a connection made before a failure is
  // still released with the rest.
  temporary_.insert(need.begin(), need.end());
  peakTemporary_ = std::max(peakTemporary_, temporary_.size());
  connectEdges({need.begin(), need.end()});
}

void Connections::releaseTemporary(const plan::Plan& p) {
  for (const Edge& e : edgesOf(p, false)) {
    if (!temporary_.erase(e)) continue;
    const bool sending = e.sender == comm_->rank;
    (sending ? sends_ : recvs_).erase({sending ? e.receiver : e.sender, e.conn, e.device});
  }
}

bool Connections::connectedFor(const plan::Plan& p, bool device) { return missingEdges(p, device).empty(); }

std::set<Connections::Edge> Connections::edgesOf(const plan::Plan& p, bool device) {
  std::set<Edge> all;
  const int me = comm_->rank;
  for (const auto& ch : p.channels)
    for (const auto& st : ch.steps) {
      for (int i = 0; i < st.nSend; i++)
        all.insert({me, st.sendPeer[i], st.conn, device && ownDeviceEdge(st.sendPeer[i], st.conn, true)});
      for (int i = 0; i < st.nRecv; i++)
        all.insert({st.recvPeer[i], me, st.conn, device && ownDeviceEdge(st.recvPeer[i], st.conn, false)});
    }
  return all;
}

// On every call's path: no set of every edge, only of the missing ones.
std::set<Connections::Edge> Connections::missingEdges(const plan::Plan& p, bool device) {
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
  return need;
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
