// A rank's side of the bootstrap: join through the root, then talk directly.
//
// Outgoing connections open lazily on first send and stay cached per peer,
// at most WEFT_BOOTSTRAP_MAX_CONNS of them: past that, the least recently
// used is retired in order before a new one opens. Every incoming connection
// is served by the rank's one Inbox thread, which files frames into the
// mailbox that recv() waits on. All-gather and barrier run over a binary tree
// of ranks (up to the root, then back down), so a rank talks to at most three
// others for them, whatever the rank count.
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/inbox.h"
#include "src/bootstrap/mailbox.h"
#include "src/bootstrap/root.h"
#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft {

using namespace bootstrap_wire;

namespace {

// Takes `lock`'s mutex before `deadline`, polling. std::timed_mutex would
// wait in pthread_mutex_clocklock, which ThreadSanitizer does not intercept:
// every unlock after it reads as an unlock of an unlocked mutex, and the
// lock orders nothing, so real races behind it would go unseen. The waits
// are short and rare (a send behind another send to the same peer, a query
// behind another query), so polling costs nothing that matters.
bool lockBefore(std::unique_lock<std::mutex>& lock, Deadline deadline) {
  for (;;) {
    if (lock.try_lock()) return true;
    if (deadline.passed()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

class SocketBootstrap final : public Bootstrap, private Inbox::Sink {
 public:
  SocketBootstrap(int rank, int nranks, const Secret& secret, int64_t timeoutMs, Socket listener,
                  std::vector<SocketAddress> table, int32_t jobNonce)
      : rank_(rank), nranks_(nranks), secret_(secret), timeoutMs_(timeoutMs), table_(std::move(table)),
        peerKey_(derivePeerKey(secret, jobNonce, table_)), mailbox_(nranks), maxConns_(maxOutgoingConnections()) {
    for (int i = 0; i < nranks; ++i) out_.push_back(std::make_unique<Outgoing>());
    inbox_ = std::make_unique<Inbox>(rank, nranks, peerKey_, std::move(listener), static_cast<Inbox::Sink*>(this),
                                     maxIncomingConnections());
  }

  ~SocketBootstrap() override {
    if (!aborted_.load()) shutdown();
    stopping_.store(true);
    inbox_->stop();
    {
      std::lock_guard<std::mutex> lock(answerMu_);
      answerCv_.notify_all();
    }
    if (answerThread_.joinable()) answerThread_.join();
  }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const Secret& secret() const override { return secret_; }
  const Secret& peerKey() const override { return peerKey_; }
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

  void allGather(void* data, size_t bytesPerRank) override { treeAllGather(data, bytesPerRank, kAllGatherTag); }

  void barrier() override {
    std::vector<char> flags(nranks_);
    treeAllGather(flags.data(), 1, kBarrierTag);
  }

  size_t peakIncomingConnections() const override { return inbox_->peakConnections(); }

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
    std::unique_lock<std::mutex> lock(queryMu_, std::defer_lock);
    if (!lockBefore(lock, deadline)) {
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
      std::lock_guard<std::mutex> lock(o.mu);
      if (!o.sock.valid()) continue;
      if (!o.retiring) {  // after a close frame the receiver reads nothing more
        FrameHeader bye{kGoodbyeTag, 0, {}};
        o.mac.sign(&bye, kFrameSignedBytes, nullptr, 0, bye.mac);
        trySendAll(o.sock.fd(), &bye, sizeof(bye), Deadline::after(1000), StopFlags{});
      }
      closeOutgoing(o);
    }
    WEFT_INFO(kBootstrap, "bootstrap rank %d: shut down", rank_);
  }

 private:
  struct Outgoing {
    std::mutex mu;
    Socket sock;
    handshake::StreamMac mac;
    std::atomic<bool> open{false};       // frames may go on sock (read without mu when choosing whom to retire)
    std::atomic<uint64_t> lastUse{0};
    // The receiver asked for a retirement and got its close frame; sock
    // stays until the receiver closes its end (the inbox thread or the next
    // send sees that), so the next connection's frames cannot overtake.
    bool retiring = false;
    std::atomic<int> watchFd{-1};        // sock's descriptor while valid, for the inbox thread
  };

  static size_t maxIncomingConnections() {
    const int64_t n = settings::get(settings::kBootstrapMaxIncoming);
    if (n < 4) raise(weftInvalidArgument, "WEFT_BOOTSTRAP_MAX_INCOMING=%ld: must be at least 4", static_cast<long>(n));
    return static_cast<size_t>(n);
  }

  static int maxOutgoingConnections() {
    const int64_t n = settings::get(settings::kBootstrapMaxConns);
    if (n < 3 || n > kMaxRanks)
      raise(weftInvalidArgument, "WEFT_BOOTSTRAP_MAX_CONNS=%ld: must be 3..%d (the all-gather tree needs 3)",
            static_cast<long>(n), kMaxRanks);
    return static_cast<int>(n);
  }

  // Tree of the collectives: rank 0 at the top, rank r's children 2r+1, 2r+2.
  int parentOf(int r) const { return r == 0 ? -1 : (r - 1) / 2; }
  bool inSubtree(int r, int top) const {
    while (r > top) r = (r - 1) / 2;
    return r == top;
  }

  // Blocks travel up the tree as (rank, block) entries, each rank adding its
  // subtree's; the top then sends the whole table down. 2(n-1) messages in
  // all, 2 log2(n) steps deep, and three peers per rank.
  void treeAllGather(void* data, size_t bytesPerRank, uint64_t tag) {
    char* base = static_cast<char*>(data);
    const size_t entry = sizeof(int32_t) + bytesPerRank;
    std::vector<char> up(entry);
    const int32_t self = rank_;
    memcpy(up.data(), &self, sizeof(self));
    if (bytesPerRank) memcpy(up.data() + sizeof(self), base + rank_ * bytesPerRank, bytesPerRank);
    for (int c = 2 * rank_ + 1; c <= 2 * rank_ + 2 && c < nranks_; ++c) {
      std::vector<char> msg = mailbox_.pop(c, tag, Deadline::after(timeoutMs_));
      if (msg.size() % entry != 0)
        raise(weftInternalError, "bootstrap all-gather: rank %d sent %zu bytes, not whole %zu-byte entries", c,
              msg.size(), entry);
      for (size_t at = 0; at < msg.size(); at += entry) {
        int32_t r;
        memcpy(&r, msg.data() + at, sizeof(r));
        if (r < 0 || r >= nranks_ || !inSubtree(r, c))
          raise(weftInternalError, "bootstrap all-gather: rank %d sent a block for rank %d (not below it)", c, r);
        if (bytesPerRank) memcpy(base + r * bytesPerRank, msg.data() + at + sizeof(r), bytesPerRank);
      }
      up.insert(up.end(), msg.begin(), msg.end());
    }
    const size_t all = bytesPerRank * nranks_;
    if (rank_ != 0) {
      sendFrame(parentOf(rank_), tag, up.data(), up.size());
      std::vector<char> msg = mailbox_.pop(parentOf(rank_), tag, Deadline::after(timeoutMs_));
      if (msg.size() != all)
        raise(weftInternalError, "bootstrap all-gather: rank %d sent %zu bytes, expected %zu", parentOf(rank_),
              msg.size(), all);
      if (all) memcpy(base, msg.data(), all);
    }
    for (int c = 2 * rank_ + 1; c <= 2 * rank_ + 2 && c < nranks_; ++c) sendFrame(c, tag, base, all);
  }

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

  // Inbox::Sink, on the inbox thread.
  void onFrame(int peer, uint64_t tag, std::vector<char> payload) override {
    if (tag == kGoodbyeTag) {
      WEFT_TRACE(kBootstrap, "bootstrap rank %d: rank %d said goodbye", rank_, peer);
      mailbox_.markGone(peer, Mailbox::PeerGone::SaidGoodbye);
    } else if (tag == kQueryTag) {
      queueQuery(peer, std::move(payload));
    } else {
      mailbox_.push(peer, tag, std::move(payload));
    }
  }

  void onLost(int peer, const char* why) override {
    if (stopping_.load() || shutDown_.load()) return;
    WEFT_WARN("bootstrap rank %d: lost rank %d at %s (%s, no goodbye)", rank_, peer, table_[peer].str().c_str(), why);
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

  // Queries are answered on a thread of their own (started by the first),
  // never the inbox's: the reply may need a new connection to the asker,
  // and the inbox must stay free to accept the asker's connections.
  void queueQuery(int peer, std::vector<char> msg) {
    std::lock_guard<std::mutex> lock(answerMu_);
    if (answerQueue_.size() >= kMaxQueuedQueries) return;  // a flood of queries is not answered
    answerQueue_.emplace_back(peer, std::move(msg));
    if (!answerThread_.joinable()) {
      try {
        answerThread_ = std::thread([this] { answerLoop(); });
      } catch (const std::system_error& e) {
        WEFT_WARN("bootstrap rank %d: no thread to answer queries (%s%s)", rank_, e.what(),
                  resourceHint(e.code().value(), "thread").c_str());
        answerQueue_.clear();
        return;
      }
    }
    answerCv_.notify_one();
  }

  void answerLoop() {
    setLogRank(rank_);
    std::unique_lock<std::mutex> lock(answerMu_);
    for (;;) {
      answerCv_.wait(lock, [this] { return stopping_.load() || !answerQueue_.empty(); });
      if (stopping_.load()) return;
      auto [peer, msg] = std::move(answerQueue_.front());
      answerQueue_.pop_front();
      lock.unlock();
      answerQuery(peer, msg);
      lock.lock();
    }
  }

  // The handler's answer goes back at once, with a short bound of its own.
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
    std::unique_lock<std::mutex> lock(o.mu, std::defer_lock);
    if (!lockBefore(lock, deadline))
      raise(weftTimeout, "bootstrap send to rank %d: another send to it did not end in time", peer);
    StopFlags stop{&aborted_, nullptr};
    std::string what = "rank " + std::to_string(peer) + " at " + table_[peer].str();
    if (o.retiring) awaitReceiverClose(peer, o, deadline);
    if (!o.sock.valid()) openOutgoing(peer, o, deadline, stop, what);
    o.lastUse.store(++useClock_);
    FrameHeader fh{tag, bytes, {}};
    o.mac.sign(&fh, kFrameSignedBytes, data, bytes, fh.mac);
    int err = 0;
    IoStatus st = trySendTwo(o.sock.fd(), &fh, sizeof(fh), data, bytes, deadline, stop, &err);
    if (st != IoStatus::Ok) {
      closeOutgoing(o);  // the stream is cut mid-frame; a later send starts afresh
      raise(st == IoStatus::Timeout ? weftTimeout : weftRemoteError, "bootstrap send to %s failed: %s%s%s",
            what.c_str(), ioStatusName(st), err ? ": " : "", err ? strerror(err) : "");
    }
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: sent %zu bytes to rank %d (tag %#lx)", rank_, bytes, peer,
               static_cast<unsigned long>(tag));
  }

  // Under o.mu.
  void openOutgoing(int peer, Outgoing& o, Deadline deadline, StopFlags stop, const std::string& what) {
    makeRoom(peer, deadline);
    Socket s = connectTo(table_[peer], deadline, stop, false);
    handshake::Session session =
        handshake::connectSide(s.fd(), peerKey_, handshake::Purpose::kPeer, deadline, stop, what);
    PeerHello h{kPeerHelloMagic, kVersion, rank_, nranks_};
    handshake::sendSigned(s.fd(), session.toAcceptor, &h, sizeof(h), deadline, stop, what.c_str());
    o.sock = std::move(s);
    o.mac = session.toAcceptor;
    o.open.store(true);
    o.watchFd.store(o.sock.fd());
    openCount_.fetch_add(1);
    inbox_->wake();  // to watch it for retire requests
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: connected to %s", rank_, what.c_str());
  }

  // Under o.mu.
  void closeOutgoing(Outgoing& o) {
    if (!o.sock.valid()) return;
    o.watchFd.store(-1);
    o.sock.close();
    o.retiring = false;
    if (o.open.exchange(false)) openCount_.fetch_sub(1);
  }

  // Reads what the receiver sends back after our close frame (retire
  // requests, then the end of the stream) and closes. Under o.mu.
  void awaitReceiverClose(int peer, Outgoing& o, Deadline deadline) {
    char byte;
    IoStatus st;
    while ((st = tryRecvAll(o.sock.fd(), &byte, 1, deadline, StopFlags{&aborted_, nullptr})) == IoStatus::Ok) {}
    if (st != IoStatus::Eof)
      WEFT_INFO(kBootstrap, "bootstrap rank %d: retiring the connection to rank %d: %s", rank_, peer,
                ioStatusName(st));
    closeOutgoing(o);
  }

  // Inbox::Sink, on the inbox thread: this rank's outgoing connections,
  // watched for the receivers' retire requests.
  void watchOutgoing(std::vector<std::pair<int, int>>* fds) override {
    for (int p = 0; p < nranks_; ++p)
      if (const int fd = out_[p]->watchFd.load(); fd >= 0) fds->emplace_back(fd, p);
  }

  // A retire request gets a close frame at once; the receiver's close after
  // it ends the connection. Never waits for another thread's send.
  bool onOutgoingReadable(int peer, int fd) override {
    Outgoing& o = *out_[peer];
    std::unique_lock<std::mutex> lock(o.mu, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    if (o.sock.fd() != fd) return true;  // closed (the number perhaps reused) since it was listed
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n <= 0) {  // the receiver closed: after our close frame, or it is gone (its next send will tell)
      closeOutgoing(o);
      return true;
    }
    if (o.retiring || !o.open.load()) return true;
    FrameHeader fh{kCloseTag, 0, {}};
    o.mac.sign(&fh, kFrameSignedBytes, nullptr, 0, fh.mac);
    // 32 bytes on a connection the receiver reads: the bound is for a stuck one.
    if (trySendAll(fd, &fh, sizeof(fh), Deadline::after(1000), StopFlags{&aborted_, nullptr}) != IoStatus::Ok) {
      closeOutgoing(o);
      return true;
    }
    o.retiring = true;
    if (o.open.exchange(false)) openCount_.fetch_sub(1);
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: rank %d asked: retiring the connection to it", rank_, peer);
    return true;
  }

  // At the limit, retires the least recently used connection that no other
  // thread is sending on (one in use is passed over; when all are, the
  // limit is exceeded for now rather than waited for).
  void makeRoom(int self, Deadline deadline) {
    std::vector<bool> busy(nranks_, false);
    while (openCount_.load() >= maxConns_) {
      int victim = -1;
      uint64_t oldest = UINT64_MAX;
      for (int p = 0; p < nranks_; ++p) {
        if (p == self || busy[p] || !out_[p]->open.load()) continue;
        const uint64_t u = out_[p]->lastUse.load();
        if (u < oldest) oldest = u, victim = p;
      }
      if (victim < 0) return;
      Outgoing& v = *out_[victim];
      std::unique_lock<std::mutex> lock(v.mu, std::try_to_lock);
      if (!lock.owns_lock()) {
        busy[victim] = true;
        continue;
      }
      retire(victim, v, deadline);
    }
  }

  // A close frame, then waits (bounded) for the receiver to close its end:
  // it does so after filing every earlier frame, so the next connection's
  // frames cannot overtake them. Under v.mu.
  void retire(int peer, Outgoing& v, Deadline deadline) {
    FrameHeader fh{kCloseTag, 0, {}};
    v.mac.sign(&fh, kFrameSignedBytes, nullptr, 0, fh.mac);
    const StopFlags stop{&aborted_, nullptr};
    IoStatus st = trySendAll(v.sock.fd(), &fh, sizeof(fh), deadline, stop);
    if (st != IoStatus::Ok) {
      WEFT_INFO(kBootstrap, "bootstrap rank %d: retiring the connection to rank %d: %s", rank_, peer,
                ioStatusName(st));
      closeOutgoing(v);
    } else {
      awaitReceiverClose(peer, v, deadline);  // a retire request it sent meanwhile is read, not left to reset
    }
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: retired the connection to rank %d", rank_, peer);
  }

  static constexpr size_t kMaxQueuedQueries = 1024;

  const int rank_;
  const int nranks_;
  const Secret secret_;
  const int64_t timeoutMs_;
  const std::vector<SocketAddress> table_;
  const Secret peerKey_;  // rank-to-rank handshakes: this set-up's members only (after table_)
  Mailbox mailbox_;
  const int maxConns_;
  std::vector<std::unique_ptr<Outgoing>> out_;
  std::atomic<int> openCount_{0};       // outgoing connections open
  std::atomic<uint64_t> useClock_{0};   // orders sends, for least-recently-used
  std::atomic<bool> aborted_{false};
  std::atomic<bool> shutDown_{false};
  std::atomic<bool> stopping_{false};
  std::mutex handlerMu_;
  std::function<void(int)> peerLost_;
  QueryHandler queryHandler_;
  std::mutex queryMu_;
  uint64_t queryCount_ = 0;  // under queryMu_
  std::mutex answerMu_;
  std::condition_variable answerCv_;
  std::deque<std::pair<int, std::vector<char>>> answerQueue_;
  std::thread answerThread_;
  std::unique_ptr<Inbox> inbox_;  // last: its thread calls into the members above
};

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
  int32_t jobNonce = 0;
  std::vector<SocketAddress> table = readRootReply(root.fd(), session.toConnector, rank, nranks, deadline,
                                                   timeoutMs, rootName, &jobNonce);
  WEFT_INFO(kBootstrap, "bootstrap rank %d/%d: joined", rank, nranks);
  return std::make_unique<SocketBootstrap>(rank, nranks, secret, timeoutMs, std::move(listener), std::move(table),
                                           jobNonce);
}

}  // namespace weft
