// The socket transport: the fallback that joins any two ranks over TCP.
//
// Handshake: the receiving half listens and sends {address, socket count,
// nonce} to the sender over the bootstrap, then returns at once (its proxy
// accepts the sockets in the background), so the order in which the two
// ranks call their halves does not matter as long as every connectRecv is
// called before the connectSend that waits for it. The sending half waits
// for that message, connects the sockets and proves the secret on each.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "src/bootstrap/handshake.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/socket/socket_connection.h"
#include "transports/transport.h"
#include "src/util/settings.h"

namespace weft {

using namespace socket_wire;

namespace {

uint32_t socketCount() {
  int64_t n = settings::get(settings::kSocketNSocks);
  if (n < 1 || n > kMaxSockets)
    raise(weftInvalidArgument, "WEFT_SOCKET_NSOCKS=%ld: must be 1..%u", static_cast<long>(n), kMaxSockets);
  return static_cast<uint32_t>(n);
}

std::string peerName(const ConnectContext& ctx, int peer) {
  std::string name = "rank " + std::to_string(peer);
  std::string addr = ctx.bootstrap ? ctx.bootstrap->peerAddress(peer) : std::string();
  if (!addr.empty()) name += " (bootstrap " + addr + ")";
  return name;
}

SocketConnection::Params baseParams(ConnectContext& ctx, int peer, uint64_t tag, SocketConnection::Side side,
                                    const std::string& ifName) {
  SocketConnection::Params p;
  p.side = side;
  p.rank = ctx.rank;
  p.peer = peer;
  p.tag = tag;
  p.ifName = ifName;
  p.peerName = peerName(ctx, peer);
  p.geometry = ctx.geometry;
  p.localBell = ctx.localBell;
  p.abortFlag = ctx.abortFlag;
  p.oversubscribed = ctx.oversubscribed;
  p.ranksFillCores = ctx.ranksFillCores;
  p.onAsyncError = ctx.onAsyncError;
  p.secret = ctx.secret;
  p.nonce = 0;
  p.nSockets = 1;
  p.acceptTimeoutMs = ctx.timeoutMs;
  return p;
}

// The live connection ends of one rank, by direction, peer and the
// edge's tag without its sender and receiver (the same for both directions
// of an edge): a receiving end made while a sending end to the same peer
// lives shares that end's sockets. Held by the transport and by every end
// (which leaves it on destruction), so neither outlives the other's use.
class LiveEnds {
 public:
  using Key = std::tuple<SocketConnection::Side, int, uint64_t>;
  static Key key(SocketConnection::Side side, int peer, uint64_t tag) {
    return {side, peer, tag & ~((uint64_t(1) << 44) - 1)};
  }
  // A duplicate of socket 0 of the live end at `k`; invalid, with *why
  // set, when there is none or it cannot lend it. `once`: an end lends its
  // socket 0 to one other end in its life, so the direction it does not
  // use carries one stream only (a second one would start behind the
  // first one's unread close marker).
  Socket firstSocket(const Key& k, uint32_t nSockets, bool once, Deadline deadline, std::string* why) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(k);
    if (it == live_.end()) {
      *why = "no such connection";
      return Socket();
    }
    Entry& e = it->second;
    if (e.conn->socketCount() != nSockets) {
      *why = std::to_string(e.conn->socketCount()) + " sockets, not " + std::to_string(nSockets);
      return Socket();
    }
    if (once && e.lent) {
      *why = "its socket was lent before";
      return Socket();
    }
    Socket out = e.conn->duplicateFirstSocket(deadline, why);
    if (out.valid()) e.lent = true;
    return out;
  }
  void add(const Key& k, SocketConnection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    live_[k] = Entry{c, false};
  }
  void remove(const Key& k, SocketConnection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(k);
    if (it != live_.end() && it->second.conn == c) live_.erase(it);
  }

 private:
  struct Entry {
    SocketConnection* conn;
    bool lent;
  };
  std::mutex mu_;
  std::map<Key, Entry> live_;
};

class SocketTransport final : public Transport {
 public:
  const char* name() const override { return "Socket"; }

  // Two proxy threads per rank, whatever its peers and channels: one for
  // all of its sending connection ends, one for all of its receiving ones
  // (a transport object belongs to one rank of one communicator). Split by
  // direction so a rank's sends and receives still move side by side, as
  // they did with a thread per connection end: a ring step both sends and
  // receives, and one thread doing both made 1-16 MB calls 1.5-3x slower
  // on loopback. A service lives while a connection on it does.
  // Where ranks outnumber cores the receiving service naps in poll() as
  // soon as a pass finds nothing, without yielding first: every rank's
  // proxies yielding in turn keep the cores busy with failed reads while the
  // ranks that would send are queued behind them; poll() costs nothing until
  // the data is there, and the kernel wakes the thread on arrival.
  std::shared_ptr<ProxyService> service(const ConnectContext& ctx, SocketConnection::Side side) {
    const int rank = ctx.rank;
    std::lock_guard<std::mutex> lock(serviceMu_);
    std::weak_ptr<ProxyService>& slot = side == SocketConnection::Side::Send ? sendService_ : recvService_;
    if (auto live = slot.lock()) return live;
    // Readiness of the sockets and the executor's rings wake it; the slice
    // bounds how late it sees an abort or a halt nobody rings for.
    const char* dir = side == SocketConnection::Side::Send ? "s" : "r";
    auto made = std::make_shared<ProxyService>("weft-sock" + std::string(dir) + "-" + std::to_string(rank),
                                               kProxySleepSliceNs, /*spin=*/false, rank,
                                               /*yield=*/!(side == SocketConnection::Side::Recv && ctx.oversubscribed));
    slot = made;
    return made;
  }

  bool canConnect(const ConnectContext&, int, std::string*) const override { return true; }

  std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) override {
    if (settings::get(settings::kSocketBidir) != 0)
      if (auto conn = recvOnOwnSockets(ctx, peer, tag)) return conn;
    NetInterface nic = chooseInterface();
    auto p = baseParams(ctx, peer, tag, SocketConnection::Side::Recv, nic.name);
    p.service = service(ctx, SocketConnection::Side::Recv);
    p.nSockets = socketCount();
    ConnectInfo info;
    Socket listener = listenFor(nic, &p, &info);
    // The connection (and its accepting proxy) exists before the sender
    // learns where to connect.
    auto conn = made(std::move(p), std::vector<Socket>{}, std::move(listener));
    ctx.bootstrap->send(peer, tag, &info, sizeof(info));
    WEFT_INFO(kNet, "NET/Socket/%s: rank %d receives from rank %d on %s (%u sockets, tag %lu)", nic.name.c_str(),
              ctx.rank, peer, info.addr.str().c_str(), info.nSockets, static_cast<unsigned long>(tag));
    return conn;
  }

  std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) override {
    ConnectInfo info;
    ctx.bootstrap->recv(peer, tag, &info, sizeof(info));
    if (const std::string bad = connectInfoProblem(info); !bad.empty())
      raise(weftInternalError, "NET/Socket: rank %d sent a bad connect message (%s; %u sockets, address %s)", peer,
            bad.c_str(), info.nSockets, info.addr.str().c_str());
    NetInterface nic = chooseInterface();
    Deadline deadline = Deadline::after(ctx.timeoutMs);
    if (info.reverse) return sendOnPeerSockets(ctx, peer, tag, info, nic, deadline);
    std::string what = "rank " + std::to_string(peer) + " at " + info.addr.str();
    std::vector<Socket> sockets;
    connectData(ctx, tag, info, 0, deadline, what, &sockets);
    auto p = sendParams(ctx, peer, tag, info, nic.name, what);
    WEFT_INFO(kNet, "NET/Socket/%s: rank %d sends to %s (%u sockets, tag %lu)", nic.name.c_str(), ctx.rank,
              what.c_str(), info.nSockets, static_cast<unsigned long>(tag));
    return made(std::move(p), std::move(sockets), Socket());
  }

 private:
  // Listens for an edge's sockets: p's nonce, and the message that tells
  // the sender where to connect.
  static Socket listenFor(const NetInterface& nic, SocketConnection::Params* p, ConnectInfo* info) {
    SocketAddress bound;
    Socket listener = listenOn(nic.addr, &bound, 64);
    randomBytes(&p->nonce, sizeof(p->nonce));
    memset(info, 0, sizeof(*info));
    info->addr = bound;
    info->nSockets = p->nSockets;
    info->nonce = p->nonce;
    return listener;
  }

  // Connects sockets [first, info.nSockets) of an edge and proves the
  // secret and sends the hello on each.
  static void connectData(ConnectContext& ctx, uint64_t tag, const ConnectInfo& info, uint32_t first,
                          Deadline deadline, const std::string& what, std::vector<Socket>* sockets) {
    StopFlags stop{ctx.abortFlag, nullptr};
    for (uint32_t i = first; i < info.nSockets; ++i) {
      Socket s = connectTo(info.addr, deadline, stop, true);
      handshake::Session session =
          handshake::connectSide(s.fd(), ctx.secret, handshake::Purpose::kSocketData, deadline, stop, what);
      SocketHello h;
      memset(&h, 0, sizeof(h));
      h.magic = kHelloMagic;
      h.version = kVersion;
      h.senderRank = ctx.rank;
      h.index = i;
      h.tag = tag;
      h.nonce = info.nonce;
      handshake::sendSigned(s.fd(), session.toAcceptor, &h, sizeof(h), deadline, stop, what.c_str());
      sockets->push_back(std::move(s));
    }
  }

  // Makes an end and keeps it in live_ while it exists.
  // A sending end's parameters: the sockets and nonce come from what the
  // receiving end published.
  SocketConnection::Params sendParams(ConnectContext& ctx, int peer, uint64_t tag, const ConnectInfo& info,
                                      const std::string& ifName, const std::string& what) {
    auto p = baseParams(ctx, peer, tag, SocketConnection::Side::Send, ifName);
    p.service = service(ctx, SocketConnection::Side::Send);
    p.peerName = what;
    p.nSockets = info.nSockets;
    p.nonce = info.nonce;
    return p;
  }

  std::unique_ptr<SocketConnection> made(SocketConnection::Params p, std::vector<Socket> sockets, Socket listener) {
    const LiveEnds::Key k = LiveEnds::key(p.side, p.peer, p.tag);
    auto holder = std::make_shared<SocketConnection*>(nullptr);
    p.onDestroy = [live = live_, k, holder] { live->remove(k, *holder); };
    auto conn = std::make_unique<SocketConnection>(std::move(p), std::move(sockets), std::move(listener));
    *holder = conn.get();
    live_->add(k, conn.get());
    return conn;
  }

  // The receiving end of an edge whose other direction this rank already
  // sends on: it reads socket 0 of the sending end, and the sender is told
  // to write into the one it accepted (ConnectInfo::reverse); the other
  // sockets are new. Null when there is no such sending end.
  std::unique_ptr<Connection> recvOnOwnSockets(ConnectContext& ctx, int peer, uint64_t tag) {
    const uint32_t n = socketCount();
    std::string why;
    Socket shared =
        live_->firstSocket(LiveEnds::key(SocketConnection::Side::Send, peer, tag), n, true, Deadline::after(0), &why);
    if (!shared.valid()) return nullptr;
    NetInterface nic = chooseInterface();
    auto p = baseParams(ctx, peer, tag, SocketConnection::Side::Recv, nic.name);
    p.service = service(ctx, SocketConnection::Side::Recv);
    p.nSockets = n;
    ConnectInfo info;
    memset(&info, 0, sizeof(info));
    info.nSockets = n;
    Socket listener;
    if (n > 1) listener = listenFor(nic, &p, &info);
    info.reverse = 1;
    std::vector<Socket> sockets;
    sockets.push_back(std::move(shared));
    auto conn = made(std::move(p), std::move(sockets), std::move(listener));
    ctx.bootstrap->send(peer, tag, &info, sizeof(info));
    WEFT_INFO(kNet, "NET/Socket/%s: rank %d receives from rank %d on socket 0 of its own connection to it (%u "
              "sockets, tag %lu)", nic.name.c_str(), ctx.rank, peer, n, static_cast<unsigned long>(tag));
    return conn;
  }

  // The sending end told to write into socket 0 of this rank's receiving
  // end from the same peer, and to connect the others as usual.
  std::unique_ptr<Connection> sendOnPeerSockets(ConnectContext& ctx, int peer, uint64_t tag, const ConnectInfo& info,
                                                const NetInterface& nic, Deadline deadline) {
    std::string why;
    Socket shared =
        live_->firstSocket(LiveEnds::key(SocketConnection::Side::Recv, peer, tag), info.nSockets, false, deadline, &why);
    if (!shared.valid())
      raise(weftInternalError,
            "NET/Socket: rank %d asked rank %d to send on the socket it receives from it on, but that connection "
            "cannot lend it (%s)",
            peer, ctx.rank, why.c_str());
    std::string what = "rank " + std::to_string(peer) + (info.nSockets > 1 ? " at " + info.addr.str() : "");
    std::vector<Socket> sockets;
    sockets.push_back(std::move(shared));
    connectData(ctx, tag, info, 1, deadline, what, &sockets);
    auto p = sendParams(ctx, peer, tag, info, nic.name, what);
    WEFT_INFO(kNet, "NET/Socket/%s: rank %d sends to %s on socket 0 of its connection from it (%u sockets, tag %lu)",
              nic.name.c_str(), ctx.rank, what.c_str(), info.nSockets, static_cast<unsigned long>(tag));
    return made(std::move(p), std::move(sockets), Socket());
  }

  std::shared_ptr<LiveEnds> live_ = std::make_shared<LiveEnds>();
  std::mutex serviceMu_;
  std::weak_ptr<ProxyService> sendService_, recvService_;
};

}  // namespace

std::unique_ptr<Transport> makeSocketTransport() { return std::make_unique<SocketTransport>(); }

}  // namespace weft
