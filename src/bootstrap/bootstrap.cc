// A rank's side of the bootstrap: join through the root, then talk directly.
//
// Outgoing connections open lazily on first send and stay cached per peer.
// Each incoming connection gets its own reader thread (the bootstrap has few
// peers and little traffic; a thread per connection keeps each one simple
// and lets a silent stray client stall nobody). Readers file frames into the
// mailbox, which recv() waits on.
#include <chrono>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/mailbox.h"
#include "src/bootstrap/root.h"
#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

using namespace bootstrap_wire;

namespace {

class SocketBootstrap final : public Bootstrap {
 public:
  SocketBootstrap(int rank, int nranks, const Secret& secret, int64_t timeoutMs, Socket listener,
                  std::vector<SocketAddress> table)
      : rank_(rank), nranks_(nranks), secret_(secret), timeoutMs_(timeoutMs), listener_(std::move(listener)),
        table_(std::move(table)), mailbox_(nranks),
        connectedFrom_(new std::atomic<bool>[nranks]()) {
    for (int i = 0; i < nranks; ++i) out_.push_back(std::make_unique<Outgoing>());
    acceptThread_ = std::thread([this] { acceptLoop(); });
  }

  ~SocketBootstrap() override {
    if (!aborted_.load()) shutdown();
    stopping_.store(true);
    if (acceptThread_.joinable()) acceptThread_.join();
    std::lock_guard<std::mutex> lock(readersMu_);
    for (auto& r : readers_) r.sock.shutdownBoth();
    for (auto& r : readers_)
      if (r.thread.joinable()) r.thread.join();
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const Secret& secret() const override { return secret_; }
  std::string peerAddress(int peer) const override {
    return peer >= 0 && peer < nranks_ ? table_[peer].str() : std::string();
  }

  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    if (tag >= kFirstReservedTag)
      raise(weftInvalidArgument, "bootstrap send: tag %#lx is reserved", static_cast<unsigned long>(tag));
    sendFrame(peer, tag, data, bytes);
  }

  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    checkPeer(peer, "recv");
    std::vector<char> msg = mailbox_.pop(peer, tag, Deadline::after(timeoutMs_));
    if (msg.size() != bytes)
      raise(weftInternalError, "bootstrap recv from rank %d (tag %#lx): message has %zu bytes, expected %zu", peer,
            static_cast<unsigned long>(tag), msg.size(), bytes);
    if (bytes) memcpy(data, msg.data(), bytes);
  }

  // Direct exchange: every rank sends its block to every other. Fine for the
  // small blocks and rank counts the bootstrap sees; readers never block, so
  // the sends cannot deadlock.
  void allGather(void* data, size_t bytesPerRank) override { exchange(data, bytesPerRank, kAllGatherTag); }

  void barrier() override {
    std::vector<char> flags(nranks_);
    exchange(flags.data(), 1, kBarrierTag);
  }

  void abort() override {
    aborted_.store(true);
    mailbox_.abort();
    WEFT_INFO(kBootstrap, "bootstrap rank %d: aborted", rank_);
  }

  void setPeerLostHandler(std::function<void(int peer)> handler) override {
    std::lock_guard<std::mutex> lock(handlerMu_);
    peerLost_ = std::move(handler);
  }

  void setQueryHandler(QueryHandler handler) override {
    std::lock_guard<std::mutex> lock(handlerMu_);
    queryHandler_ = std::move(handler);
  }

  // One query at a time per rank (a second waits within its own bound), so
  // that each takes only the replies to its own number.
  QueryResult query(const std::vector<int>& peers, const std::vector<char>& request, int64_t waitMs) override {
    const size_t n = peers.size();
    QueryResult r{std::vector<bool>(n, false), std::vector<std::vector<char>>(n), std::vector<std::string>(n)};
    const Deadline deadline = Deadline::after(waitMs);
    std::unique_lock<std::timed_mutex> lock(queryMu_, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::milliseconds(waitMs))) {
      for (auto& w : r.why) w = "another query of this rank did not end in time";
      return r;
    }
    const uint64_t id = ++queryCount_;
    std::vector<char> msg(sizeof(id) + request.size());
    memcpy(msg.data(), &id, sizeof(id));
    if (!request.empty()) memcpy(msg.data() + sizeof(id), request.data(), request.size());
    std::vector<bool> sent(n, false);
    for (size_t i = 0; i < n; i++) {
      if (peers[i] == rank_) {
        r.answered[i] = answerLocally(request, &r.replies[i], &r.why[i]);
        continue;
      }
      try {
        sendFrame(peers[i], kQueryTag, msg.data(), msg.size(), &deadline);
        sent[i] = true;
      } catch (const std::exception& e) {
        r.why[i] = e.what();
      }
    }
    for (size_t i = 0; i < n; i++)
      if (sent[i]) r.answered[i] = awaitReply(peers[i], id, deadline, waitMs, &r.replies[i], &r.why[i]);
    return r;
  }

  void shutdown() override {
    if (shutDown_.exchange(true)) return;
    for (int p = 0; p < nranks_; ++p) {
      Outgoing& o = *out_[p];
      std::lock_guard<std::timed_mutex> lock(o.mu);
      if (!o.sock.valid()) continue;
      FrameHeader bye{kGoodbyeTag, 0, {}};
      o.mac.sign(&bye, kFrameSignedBytes, nullptr, 0, bye.mac);
      trySendAll(o.sock.fd(), &bye, sizeof(bye), Deadline::after(1000), StopFlags{});
      o.sock.close();
    }
    WEFT_INFO(kBootstrap, "bootstrap rank %d: shut down", rank_);
  }

 private:
  struct Outgoing {
    std::timed_mutex mu;
    Socket sock;
    handshake::StreamMac mac;
  };
  struct Reader {
    Socket sock;
    std::thread thread;
    std::atomic<bool> done{false};  // its thread has left; join and free it
  };

  bool answerLocally(const std::vector<char>& request, std::vector<char>* reply, std::string* why) {
    QueryHandler handler = queryHandlerNow();
    if (!handler) {
      *why = "no query handler";
      return false;
    }
    *reply = handler(rank_, request);
    return true;
  }

  bool awaitReply(int peer, uint64_t id, Deadline deadline, int64_t waitMs, std::vector<char>* reply,
                  std::string* why) {
    for (;;) {
      std::vector<char> m;
      switch (mailbox_.tryPop(peer, kQueryReplyTag, deadline, &m)) {
        case Mailbox::PopStatus::Ok: break;
        case Mailbox::PopStatus::TimedOut: *why = "no answer within " + std::to_string(waitMs) + " ms"; return false;
        case Mailbox::PopStatus::Aborted: *why = "this rank's bootstrap was aborted"; return false;
        case Mailbox::PopStatus::Gone:
          *why = mailbox_.gone(peer) == Mailbox::PeerGone::Lost ? "gone (connection closed without goodbye)"
                                                                 : "left the communicator";
          return false;
      }
      uint64_t got = 0;
      if (m.size() < sizeof(got)) continue;
      memcpy(&got, m.data(), sizeof(got));
      if (got != id) continue;  // a late reply to an earlier query
      reply->assign(m.begin() + sizeof(got), m.end());
      return true;
    }
  }

  QueryHandler queryHandlerNow() {
    std::lock_guard<std::mutex> lock(handlerMu_);
    return queryHandler_;
  }

  // On the reader thread of the asking peer: the handler's answer goes back
  // at once, with a short bound of its own, so a reader is never held long.
  void answerQuery(int peer, const std::vector<char>& msg) {
    QueryHandler handler = queryHandlerNow();
    if (!handler || msg.size() < sizeof(uint64_t) || aborted_.load() || shutDown_.load()) return;
    std::vector<char> reply(msg.begin(), msg.begin() + sizeof(uint64_t));  // the query's number
    try {
      std::vector<char> body = handler(peer, std::vector<char>(msg.begin() + sizeof(uint64_t), msg.end()));
      reply.insert(reply.end(), body.begin(), body.end());
      const Deadline d = Deadline::after(kQueryReplyMs);
      sendFrame(peer, kQueryReplyTag, reply.data(), reply.size(), &d);
    } catch (const std::exception& e) {
      WEFT_INFO(kBootstrap, "bootstrap rank %d: no answer to rank %d's query: %s", rank_, peer, e.what());
    }
  }

  void checkPeer(int peer, const char* op) const {
    if (peer < 0 || peer >= nranks_)
      raise(weftInvalidArgument, "bootstrap %s: peer %d out of range (nranks %d)", op, peer, nranks_);
  }

  void exchange(void* data, size_t bytesPerRank, uint64_t tag) {
    char* base = static_cast<char*>(data);
    for (int i = 1; i < nranks_; ++i) {
      int p = (rank_ + i) % nranks_;
      sendFrame(p, tag, base + rank_ * bytesPerRank, bytesPerRank);
    }
    for (int i = 1; i < nranks_; ++i) {
      int p = (rank_ - i + nranks_) % nranks_;
      std::vector<char> msg = mailbox_.pop(p, tag, Deadline::after(timeoutMs_));
      if (msg.size() != bytesPerRank)
        raise(weftInternalError, "bootstrap all-gather: rank %d sent %zu bytes, expected %zu", p, msg.size(),
              bytesPerRank);
      if (bytesPerRank) memcpy(base + p * bytesPerRank, msg.data(), bytesPerRank);
    }
  }

  // Bounded by the communicator's timeout unless `limit` gives a deadline.
  void sendFrame(int peer, uint64_t tag, const void* data, size_t bytes, const Deadline* limit = nullptr) {
    checkPeer(peer, "send");
    if (aborted_.load()) raise(weftRemoteError, "bootstrap send to rank %d: aborted", peer);
    if (shutDown_.load()) raise(weftInvalidUsage, "bootstrap send to rank %d after shutdown", peer);
    if (peer == rank_) {
      const char* p = static_cast<const char*>(data);
      mailbox_.push(peer, tag, std::vector<char>(p, p + bytes));
      return;
    }
    Outgoing& o = *out_[peer];
    Deadline deadline = limit ? *limit : Deadline::after(timeoutMs_);
    std::unique_lock<std::timed_mutex> lock(o.mu, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::nanoseconds(deadline.remainingNs())))
      raise(weftTimeout, "bootstrap send to rank %d: another send to it did not end in time", peer);
    StopFlags stop{&aborted_, nullptr};
    std::string what = "rank " + std::to_string(peer) + " at " + table_[peer].str();
    if (!o.sock.valid()) {
      Socket s = connectTo(table_[peer], deadline, stop, false);
      handshake::Session session =
          handshake::connectSide(s.fd(), secret_, handshake::Purpose::kPeer, deadline, stop, what);
      PeerHello h{kPeerHelloMagic, kVersion, rank_, nranks_};
      handshake::sendSigned(s.fd(), session.toAcceptor, &h, sizeof(h), deadline, stop, what.c_str());
      o.sock = std::move(s);
      o.mac = session.toAcceptor;
      WEFT_TRACE(kBootstrap, "bootstrap rank %d: connected to %s", rank_, what.c_str());
    }
    FrameHeader fh{tag, bytes, {}};
    o.mac.sign(&fh, kFrameSignedBytes, data, bytes, fh.mac);
    int err = 0;
    IoStatus st = trySendTwo(o.sock.fd(), &fh, sizeof(fh), data, bytes, deadline, stop, &err);
    if (st != IoStatus::Ok) {
      o.sock.close();  // the stream is cut mid-frame; a later send starts afresh
      raise(st == IoStatus::Timeout ? weftTimeout : weftRemoteError, "bootstrap send to %s failed: %s%s%s",
            what.c_str(), ioStatusName(st), err ? ": " : "", err ? strerror(err) : "");
    }
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: sent %zu bytes to rank %d (tag %#lx)", rank_, bytes, peer,
               static_cast<unsigned long>(tag));
  }

  void acceptLoop() {
    setLogRank(rank_);
    try {
      for (;;) {
        SocketAddress from;
        Socket s = acceptOne(&from);
        if (stopping_.load()) return;
        if (!s.valid()) continue;
        std::lock_guard<std::mutex> lock(readersMu_);
        pruneReaders();
        Reader& r = readers_.emplace_back();
        r.sock = std::move(s);
        try {
          r.thread = std::thread([this, &r, from] { readLoop(r, from); });
        } catch (const std::system_error& e) {
          reject(from, std::string("no thread to read it (") + e.what() + resourceHint(e.code().value(), "thread") +
                           ")");
          readers_.pop_back();
        }
      }
    } catch (const std::exception& e) {
      WEFT_WARN("bootstrap rank %d: listener failed: %s", rank_, e.what());
    }
  }

  // Out of descriptors, the listener says so (with the limit) and keeps
  // trying: readers that end give theirs back, and a peer's connect is
  // retried until its deadline. Invalid when nothing was accepted.
  Socket acceptOne(SocketAddress* from) {
    int limitErr = 0;
    Socket s = acceptFrom(listener_, noDeadline(), StopFlags{&stopping_, nullptr}, from, &limitErr);
    if (!limitErr) return s;
    if (!acceptStarved_.exchange(true))
      WEFT_WARN("bootstrap rank %d: cannot accept peer connections: %s%s", rank_, strerror(limitErr),
                resourceHint(limitErr).c_str());
    {
      std::lock_guard<std::mutex> lock(readersMu_);
      pruneReaders();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return Socket();
  }

  // Frees the threads and descriptors of connections that ended (rejected
  // strays among them), so a flood of bad connections cannot pile them up.
  // Under readersMu_.
  void pruneReaders() {
    for (auto it = readers_.begin(); it != readers_.end();) {
      if (!it->done.load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = readers_.erase(it);
    }
  }

  void reject(const SocketAddress& from, const std::string& reason) {
    WEFT_WARN("bootstrap: rejected connection from %s: %s", from.str().c_str(), reason.c_str());
  }

  // Authenticates the connection, then files every frame into the mailbox
  // until the peer says goodbye, the connection breaks or this bootstrap
  // stops. Marks the reader done on the way out, whatever happened.
  void readLoop(Reader& r, SocketAddress from) {
    setLogRank(rank_);
    const int fd = r.sock.fd();
    try {
      handshake::StreamMac mac;
      int peer = acceptPeer(fd, from, &mac);
      if (peer >= 0) {
        pumpFrames(fd, peer, mac);
        connectedFrom_[peer].store(false);
      }
    } catch (const std::exception& e) {
      WEFT_WARN("bootstrap rank %d: reader for %s failed: %s", rank_, from.str().c_str(), e.what());
    }
    ::shutdown(fd, SHUT_RDWR);
    r.done.store(true);
  }

  // The handshake and the hello; returns the peer's rank, or -1 after
  // logging why the connection was turned away.
  int acceptPeer(int fd, const SocketAddress& from, handshake::StreamMac* mac) {
    StopFlags stop{&stopping_, nullptr};
    const Deadline deadline = Deadline::after(std::min(timeoutMs_, kHelloTimeoutMs));
    handshake::Session session;
    std::string bad;
    PeerHello h{};
    if (!handshake::acceptSide(fd, secret_, handshake::Purpose::kPeer, deadline, stop, &session, &bad) ||
        !handshake::recvSigned(fd, session.toAcceptor, &h, sizeof(h), deadline, stop, &bad)) {
      if (!stopping_.load()) reject(from, bad);
      return -1;
    }
    bad = peerHelloProblem(h, rank_, nranks_);
    bool wasConnected = false;
    if (bad.empty() && !connectedFrom_[h.fromRank].compare_exchange_strong(wasConnected, true))
      bad = "rank " + std::to_string(h.fromRank) + " is already connected";
    if (!bad.empty()) {
      reject(from, bad);
      return -1;
    }
    *mac = session.toAcceptor;
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: accepted rank %d from %s", rank_, h.fromRank, from.str().c_str());
    return h.fromRank;
  }

  void pumpFrames(int fd, int peer, handshake::StreamMac& mac) {
    StopFlags stop{&stopping_, nullptr};
    for (;;) {
      FrameHeader fh;
      std::vector<char> payload;
      IoStatus st = tryRecvAll(fd, &fh, sizeof(fh), noDeadline(), stop);
      if (st == IoStatus::Ok) {
        const std::string bad = frameHeaderProblem(fh);
        if (!bad.empty()) {
          WEFT_WARN("bootstrap rank %d: rank %d sent %s; closing that connection", rank_, peer, bad.c_str());
          st = IoStatus::Error;
        }
      }
      if (st == IoStatus::Ok) st = recvPayload(fd, fh.bytes, stop, &payload);
      if (st == IoStatus::Ok && !mac.verify(&fh, kFrameSignedBytes, payload.data(), payload.size(), fh.mac)) {
        WEFT_WARN("bootstrap rank %d: a frame from rank %d failed its integrity check (altered or injected); "
                  "closing that connection", rank_, peer);
        st = IoStatus::Error;
      }
      if (st != IoStatus::Ok) {
        if (st != IoStatus::Stopped && !stopping_.load() && !shutDown_.load()) peerLost(peer, st);
        return;
      }
      if (fh.tag == kGoodbyeTag) {
        WEFT_TRACE(kBootstrap, "bootstrap rank %d: rank %d said goodbye", rank_, peer);
        mailbox_.markGone(peer, Mailbox::PeerGone::SaidGoodbye);
        return;
      }
      if (fh.tag == kQueryTag) answerQuery(peer, payload);
      else mailbox_.push(peer, fh.tag, std::move(payload));
    }
  }

  // The buffer grows as bytes arrive: a header that claims a large frame
  // and then stalls holds no more memory than it sent.
  static IoStatus recvPayload(int fd, uint64_t bytes, StopFlags stop, std::vector<char>* out) {
    constexpr size_t kChunk = 1 << 20;
    while (out->size() < bytes) {
      const size_t have = out->size();
      const size_t take = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - have));
      out->resize(have + take);
      IoStatus st = tryRecvAll(fd, out->data() + have, take, noDeadline(), stop);
      if (st != IoStatus::Ok) return st;
    }
    return IoStatus::Ok;
  }

  void peerLost(int peer, IoStatus why) {
    WEFT_WARN("bootstrap rank %d: lost rank %d at %s (%s, no goodbye)", rank_, peer, table_[peer].str().c_str(),
              ioStatusName(why));
    mailbox_.markGone(peer, Mailbox::PeerGone::Lost);
    std::function<void(int)> handler;
    {
      std::lock_guard<std::mutex> lock(handlerMu_);
      handler = peerLost_;
    }
    if (!handler) return;
    try {
      handler(peer);
    } catch (const std::exception& e) {
      WEFT_WARN("bootstrap rank %d: peer-lost handler threw: %s", rank_, e.what());
    }
  }

  const int rank_;
  const int nranks_;
  const Secret secret_;
  const int64_t timeoutMs_;
  Socket listener_;
  const std::vector<SocketAddress> table_;
  Mailbox mailbox_;
  std::vector<std::unique_ptr<Outgoing>> out_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> shutDown_{false};
  std::atomic<bool> stopping_{false};
  std::thread acceptThread_;
  std::atomic<bool> acceptStarved_{false};  // warned once that accept ran out of descriptors
  std::mutex readersMu_;
  std::list<Reader> readers_;         // a list: readers keep pointers to their entry
  std::unique_ptr<std::atomic<bool>[]> connectedFrom_;  // a reader serves that rank
  std::mutex handlerMu_;
  std::function<void(int)> peerLost_;
  QueryHandler queryHandler_;
  std::timed_mutex queryMu_;
  uint64_t queryCount_ = 0;  // under queryMu_
};

// The root's answer: the address table when every rank joined, else why not.
std::vector<SocketAddress> readRootReply(int fd, handshake::StreamMac& mac, int rank, int nranks, Deadline deadline,
                                         int64_t timeoutMs, const std::string& rootName) {
  RootReply r;
  int err = 0;
  IoStatus st = tryRecvAll(fd, &r, sizeof(r), deadline, StopFlags{}, &err);
  if (st == IoStatus::Timeout)
    raise(weftTimeout, "bootstrap rank %d: not every rank joined %s within %ld ms", rank, rootName.c_str(),
          static_cast<long>(timeoutMs));
  if (st == IoStatus::Eof)
    raise(weftRemoteError, "bootstrap rank %d: %s closed the connection (it rejected the hello)", rank,
          rootName.c_str());
  if (st != IoStatus::Ok) raise(weftSystemError, "bootstrap rank %d: %s: %s", rank, rootName.c_str(), strerror(err));
  if (r.magic != kRootReplyMagic) raise(weftRemoteError, "bootstrap rank %d: %s sent garbage", rank, rootName.c_str());
  std::vector<SocketAddress> table(rootReplyTableEntries(r, nranks));
  uint8_t tag[handshake::kMacBytes];
  st = tryRecvAll(fd, table.data(), table.size() * sizeof(SocketAddress), deadline, StopFlags{}, &err);
  if (st == IoStatus::Ok) st = tryRecvAll(fd, tag, sizeof(tag), deadline, StopFlags{}, &err);
  if (st != IoStatus::Ok)
    raise(weftRemoteError, "bootstrap rank %d: %s: reply cut short (%s)", rank, rootName.c_str(), ioStatusName(st));
  if (!mac.verify(&r, sizeof(r), table.data(), table.size() * sizeof(SocketAddress), tag))
    raise(weftRemoteError, "bootstrap rank %d: %s: reply failed its integrity check", rank, rootName.c_str());
  checkRootReply(r, rank, nranks, rootName);
  return table;
}

}  // namespace

std::unique_ptr<Bootstrap> Bootstrap::join(const weftUniqueId& id, int rank, int nranks, int64_t timeoutMs) {
  UniqueIdLayout l;
  memcpy(&l, id.internal, sizeof(l));
  const std::string idBad = uniqueIdProblem(l);
  if (!idBad.empty())
    raise(weftInvalidArgument, "unique id is malformed (%s: not made by weftGetUniqueId of this weft version)",
          idBad.c_str());
  if (nranks <= 0 || rank < 0 || rank >= nranks)
    raise(weftInvalidArgument, "bootstrap join: rank %d of %d is out of range", rank, nranks);
  if (timeoutMs <= 0) raise(weftInvalidArgument, "bootstrap join: timeout %ld ms", static_cast<long>(timeoutMs));
  Secret secret;
  memcpy(secret.data(), l.secret, secret.size());
  Deadline deadline = Deadline::after(timeoutMs);

  if ((l.flags & kRootAtRank0) && rank == 0 && !bootstrapRootRunningAt(l.root)) {
    startBootstrapRoot(l.root, secret, timeoutMs);
  }

  NetInterface nic = chooseInterface();
  SocketAddress listenAddr;
  Socket listener = listenOn(nic.addr, &listenAddr);
  WEFT_INFO(kBootstrap, "bootstrap rank %d/%d: listening on %s (%s), root %s", rank, nranks,
            listenAddr.str().c_str(), nic.name.c_str(), l.root.str().c_str());

  std::string rootName = "bootstrap root " + l.root.str();
  Socket root = connectTo(l.root, deadline, StopFlags{}, false);
  handshake::Session session =
      handshake::connectSide(root.fd(), secret, handshake::Purpose::kRoot, deadline, StopFlags{}, rootName);
  RootHello h{kRootHelloMagic, kVersion, rank, nranks, listenAddr};
  handshake::sendSigned(root.fd(), session.toAcceptor, &h, sizeof(h), deadline, StopFlags{}, rootName.c_str());
  std::vector<SocketAddress> table = readRootReply(root.fd(), session.toConnector, rank, nranks, deadline,
                                                   timeoutMs, rootName);
  WEFT_INFO(kBootstrap, "bootstrap rank %d/%d: joined", rank, nranks);
  return std::make_unique<SocketBootstrap>(rank, nranks, secret, timeoutMs, std::move(listener), std::move(table));
}

}  // namespace weft
