#include "src/bootstrap/root.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"
#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

using namespace bootstrap_wire;

namespace {

class Root;

// The roots this process serves, by address. Never destroyed: detached
// root threads may still touch it while the process exits.
struct RootRegistry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<Root>> running;
};
RootRegistry& registry() {
  static auto* r = new RootRegistry;
  return *r;
}

class Root {
 public:
  Root(Socket listener, SocketAddress addr, const Secret& secret, int64_t timeoutMs, int64_t lateGraceMs)
      : listener_(std::move(listener)), addr_(addr), secret_(secret), timeoutMs_(timeoutMs),
        lateGraceMs_(lateGraceMs), deadline_(Deadline::after(timeoutMs)),
        wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    randomBytes(&jobNonce_, sizeof jobNonce_);
  }

  void run() {
    WEFT_INFO(kBootstrap, "bootstrap root listening on %s (timeout %ld ms)", addr_.str().c_str(),
              static_cast<long>(timeoutMs_));
    std::list<Handler> handlers;
    try {
      for (;;) {
        SocketAddress from;
        int limitErr = 0;
        Socket s = acceptOrWake(handlers, deadline_, /*late=*/false, &from, &limitErr);
        if (limitErr) {
          // Descriptors may come back as handlers finish: keep trying, but
          // answer the ranks that joined a while before their own deadlines
          // (about the root's) pass, or they would only see a timeout.
          noteLimit(std::string("accept failed: ") + strerror(limitErr) + resourceHint(limitErr));
          if (nowNs() > deadline_.atNs - limitMarginNs()) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          continue;
        }
        if (!s.valid()) break;
        startHandler(handlers, std::move(s), from);
      }
    } catch (const std::exception& e) {
      WEFT_WARN("bootstrap root at %s: %s", addr_.str().c_str(), e.what());
    }
    finish();
    if (!allJoined_.load() || conflict_.load()) serveLateRanks(handlers);
    for (auto& h : handlers) h.thread.join();
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().running.erase(addr_.str());
  }

 private:
  // A connection that proved the secret, and the key of the root's replies.
  struct Joined {
    Socket sock;
    handshake::StreamMac replyMac;
  };
  struct Handler {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  // The next connection, or an invalid socket once `until` passed or the
  // wait was ended (endWait). While ranks may still join (not `late`), also
  // once a handler ended the set-up (every rank joined, or a conflict): a
  // handler rings wake_, so the table goes out at once instead of at the
  // accept loop's next look at its flags.
  Socket acceptOrWake(std::list<Handler>& handlers, Deadline until, bool late, SocketAddress* from, int* limitErr) {
    for (;;) {
      joinFinished(handlers);
      if (until.passed() || waitsEnded_.load() > (late ? 1 : 0)) return Socket();
      if (!late && (allJoined_.load() || conflict_.load())) return Socket();
      pollfd p[2] = {{listener_.fd(), POLLIN, 0}, {wake_.fd(), POLLIN, 0}};
      // Without an eventfd (descriptors ran out) the flags are looked at
      // every 20 ms instead.
      const int64_t sliceMs = wake_.valid() ? 1000 : 20;
      const int64_t ms = std::min<int64_t>(sliceMs, until.remainingNs() / 1000000 + 1);
      const int n = ::poll(p, 2, static_cast<int>(ms));
      if (n < 0 && errno != EINTR) raiseErrno("poll");
      if (n > 0 && p[1].revents) {  // the flags above say why: they come before any connection waiting
        uint64_t rung;
        (void)!::read(wake_.fd(), &rung, sizeof rung);
        continue;
      }
      if (n <= 0 || !p[0].revents) continue;
      Socket s = acceptWaiting(listener_, from, limitErr);
      if (s.valid() || *limitErr) return s;
    }
  }

 public:
  // Ends the current wait now: the first call the wait for ranks (as if
  // the deadline passed), the next the late grace.
  void endWait() {
    waitsEnded_.fetch_add(1);
    wakeAcceptLoop();
  }

 private:
  void wakeAcceptLoop() {
    const uint64_t one = 1;
    if (wake_.valid()) (void)!::write(wake_.fd(), &one, sizeof one);
  }

  // For a while after a timeout, a rank that connects (or already waits in
  // the listen queue) still gets its handshake and a signed "timed out",
  // instead of a connection reset it could not tell from a crash.
  void serveLateRanks(std::list<Handler>& handlers) {
    const Deadline grace = Deadline::after(lateGraceMs_);
    try {
      for (;;) {
        SocketAddress from;
        int limitErr = 0;
        Socket s = acceptOrWake(handlers, grace, /*late=*/true, &from, &limitErr);
        if (limitErr) {
          WEFT_INFO(kBootstrap, "bootstrap root at %s: after its timeout: accept failed: %s", addr_.str().c_str(),
                    strerror(limitErr));
          return;
        }
        if (!s.valid()) return;
        startHandler(handlers, std::move(s), from);
      }
    } catch (const std::exception& e) {
      WEFT_INFO(kBootstrap, "bootstrap root at %s: after its timeout: %s", addr_.str().c_str(), e.what());
    }
  }

  // Finished handlers are joined when the accept loop wakes: a handler rings
  // it as its last step, so none waits for the next connection or the end of
  // the late grace. A process that exits meanwhile (the root's thread is
  // detached) then holds no finished, unjoined thread.
  static void joinFinished(std::list<Handler>& handlers) {
    for (auto it = handlers.begin(); it != handlers.end();) {
      if (it->done.load()) {
        it->thread.join();
        it = handlers.erase(it);
      } else {
        ++it;
      }
    }
  }

  // One thread per connection, so a silent client stalls nobody; finished
  // ones are joined at once (joinFinished), so a flood leaves nothing behind.
  void startHandler(std::list<Handler>& handlers, Socket s, const SocketAddress& from) {
    joinFinished(handlers);
    Handler& h = handlers.emplace_back();
    try {
      h.thread = std::thread([this, &h, sock = std::move(s), from]() mutable {
        try {
          handle(std::move(sock), from);
        } catch (const std::exception& e) {
          WEFT_WARN("bootstrap root: connection from %s failed: %s", from.str().c_str(), e.what());
        }
        h.done.store(true);
        wakeAcceptLoop();
      });
    } catch (const std::system_error& e) {
      handlers.pop_back();
      WEFT_WARN("bootstrap root: rejected connection from %s: no thread to serve it (%s%s)", from.str().c_str(),
                e.what(), resourceHint(e.code().value(), "thread").c_str());
      noteLimit(std::string("no thread to serve a connection: ") + e.what() +
                resourceHint(e.code().value(), "thread"));
    }
  }

  // The first process limit the root ran into (said once in the log).
  void noteLimit(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!limitHit_.empty()) return;
    limitHit_ = what;
    WEFT_WARN("bootstrap root at %s: %s; still accepting until the deadline", addr_.str().c_str(), what.c_str());
  }

  // How long before its deadline a root short of descriptors answers.
  int64_t limitMarginNs() const { return std::min<int64_t>(timeoutMs_ / 5, 2000) * 1000000; }

  RootStatus failureStatus() const {
    if (!conflictNote_.empty()) return kRootDuplicateRank;
    return limitHit_.empty() ? kRootTimedOut : kRootOutOfResources;
  }

  static void reply(Joined& j, RootStatus status, int32_t nranks, const void* table = nullptr,
                    size_t tableBytes = 0, int64_t waitMs = 1000, int32_t jobNonce = 0) {
    RootReply r{kRootReplyMagic, status, nranks, jobNonce};
    uint8_t tag[handshake::kMacBytes];
    j.replyMac.sign(&r, sizeof(r), table, tableBytes, tag);
    const Deadline d = Deadline::after(waitMs);
    IoStatus st = trySendAll(j.sock.fd(), &r, sizeof(r), d, StopFlags{});
    if (st == IoStatus::Ok && tableBytes) st = trySendAll(j.sock.fd(), table, tableBytes, d, StopFlags{});
    if (st == IoStatus::Ok) st = trySendAll(j.sock.fd(), tag, sizeof(tag), d, StopFlags{});
    if (st != IoStatus::Ok) WEFT_WARN("bootstrap root: could not answer a rank: %s", ioStatusName(st));
  }

  // Authenticates one connection and reads its hello; keeps the connection
  // if the rank is accepted. A handshake under way when the root's deadline
  // passes still completes (within its own bound), so a rank that came late
  // hears a signed "timed out" rather than a reset connection.
  void handle(Socket s, SocketAddress from) {
    const Deadline helloDeadline = Deadline::after(kHelloTimeoutMs);
    const StopFlags stop{};
    handshake::Session session;
    std::string bad;
    RootHello h{};
    if (handshake::acceptSide(s.fd(), secret_, handshake::Purpose::kRoot, helloDeadline, stop, &session, &bad) &&
        handshake::recvSigned(s.fd(), session.toAcceptor, &h, sizeof(h), helloDeadline, stop, &bad))
      bad = rootHelloProblem(h);
    if (!bad.empty()) {
      handshake::warnRejected("bootstrap", from, bad);
      return;
    }
    admit(Joined{std::move(s), session.toConnector}, h, from);
  }

  void admit(Joined j, const RootHello& h, const SocketAddress& from) {
    std::unique_lock<std::mutex> lock(mu_);
    if (finished_) {
      // After the table went out, a claim of a rank that joined is the
      // same conflict, found too late to stop the others.
      const bool claimed = ranks_.count(h.rank) != 0;
      const RootStatus status = claimed ? kRootDuplicateRank : failureStatus();
      lock.unlock();
      if (claimed && !conflictNote_.empty())
        WEFT_WARN("bootstrap: rank %d from %s arrived after the set-up stopped (%s)", h.rank, from.str().c_str(),
                  conflictNote_.c_str());
      else if (claimed)
        WEFT_WARN("bootstrap root at %s: rank %d, which joined already, was claimed again from %s after every rank "
                  "joined: a duplicate launch or a process impersonating that rank (one of them has its place)",
                  addr_.str().c_str(), h.rank, from.str().c_str());
      else if (!conflictNote_.empty())
        WEFT_WARN("bootstrap: rank %d from %s arrived after the set-up stopped (%s)", h.rank, from.str().c_str(),
                  conflictNote_.c_str());
      else
        WEFT_WARN("bootstrap: rank %d from %s arrived after the root's %ld ms deadline", h.rank, from.str().c_str(),
                  static_cast<long>(timeoutMs_));
      reply(j, status, h.nranks);
      return;
    }
    if (nranks_ == 0) nranks_ = h.nranks;
    if (h.nranks != nranks_) {
      lock.unlock();
      WEFT_WARN("bootstrap: rejected connection from %s: rank %d says nranks=%d but earlier ranks said nranks=%d",
                from.str().c_str(), h.rank, h.nranks, nranks_);
      reply(j, kRootNranksMismatch, nranks_);
      return;
    }
    if (ranks_.count(h.rank)) {
      // Both proved the secret: a second launch of the job, or a process
      // claiming a rank not its own. The root cannot tell which one is the
      // real rank, so nobody gets a table that may name the wrong one.
      conflictNote_ = "rank " + std::to_string(h.rank) + " was claimed by a process listening at " +
                      addrs_.at(h.rank).str() + " and again from " + from.str();
      lock.unlock();
      WEFT_WARN("bootstrap root at %s: %s: a duplicate launch or a process impersonating that rank; stopping the "
                "job's set-up", addr_.str().c_str(), conflictNote_.c_str());
      reply(j, kRootDuplicateRank, nranks_);
      conflict_.store(true);
      wakeAcceptLoop();
      return;
    }
    WEFT_TRACE(kBootstrap, "bootstrap root: rank %d/%d joined from %s, listens on %s", h.rank, h.nranks,
               from.str().c_str(), h.listen.str().c_str());
    ranks_.emplace(h.rank, std::move(j));
    addrs_.emplace(h.rank, h.listen);
    if (++joined_ == nranks_) {
      allJoined_.store(true);
      wakeAcceptLoop();
    }
  }

  // Answers every rank that joined: the table when all did, else a timeout.
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    if (!conflictNote_.empty()) {
      for (auto& [rank, j] : ranks_) reply(j, kRootDuplicateRank, nranks_);
      return;
    }
    if (nranks_ > 0 && joined_ == nranks_) {
      // Every rank 0..nranks-1 joined once: the table is whole.
      std::vector<SocketAddress> table;
      table.reserve(addrs_.size());
      for (const auto& [rank, a] : addrs_) table.push_back(a);
      for (auto& [rank, j] : ranks_)
        reply(j, kRootOk, nranks_, table.data(), table.size() * sizeof(SocketAddress), timeoutMs_, jobNonce_);
      WEFT_INFO(kBootstrap, "bootstrap root at %s: all %d ranks joined", addr_.str().c_str(), nranks_);
      return;
    }
    // The first few missing ranks by number, then a count: a hello may claim
    // up to kMaxRanks ranks, and the log line is cut at 2 KiB anyway.
    constexpr int kListed = 32;
    std::string missing;
    const int nMissing = nranks_ - joined_;
    for (int r = 0, listed = 0; r < nranks_ && listed < std::min(nMissing, kListed); ++r)
      if (!ranks_.count(r)) {
        missing += (missing.empty() ? "" : ",") + std::to_string(r);
        ++listed;
      }
    if (nMissing > kListed) missing += " and " + std::to_string(nMissing - kListed) + " more";
    const std::string ended = waitsEnded_.load() ? std::string("its wait was ended")
                                                 : "timed out after " + std::to_string(timeoutMs_) + " ms";
    WEFT_WARN("bootstrap root at %s: %s with %d of %d ranks joined (missing: %s)%s%s", addr_.str().c_str(),
              ended.c_str(), joined_, nranks_,
              nranks_ ? missing.c_str() : "all", limitHit_.empty() ? "" : "; it could not serve every rank: ",
              limitHit_.c_str());
    for (auto& [rank, j] : ranks_) reply(j, failureStatus(), nranks_);
  }

  Socket listener_;
  SocketAddress addr_;
  Secret secret_;
  int64_t timeoutMs_;
  int64_t lateGraceMs_;
  Deadline deadline_;
  std::atomic<bool> allJoined_{false};
  std::atomic<bool> conflict_{false};  // two hellos claimed one rank: set-up stops
  std::atomic<int> waitsEnded_{0};     // endWait calls: 1 ends the wait for ranks, 2 the late grace
  Socket wake_;  // an eventfd, rung when a handler ends the set-up or endWait a wait
  int32_t jobNonce_ = 0;  // in the table's reply: part of the ranks' peer key (bootstrap.cc)
  std::mutex mu_;
  bool finished_ = false;  // the table or the timeout went out; later ranks are told they are late
  std::string limitHit_;   // under mu_: the process limit that kept the root from serving a rank
  std::string conflictNote_;  // under mu_: which rank two hellos claimed, from where
  int32_t nranks_ = 0;
  int32_t joined_ = 0;
  // By rank, only the ranks that joined: a hello may claim up to kMaxRanks
  // ranks, and arrays of that size (about 180 MB, zero-filled) for one
  // authenticated hello cost the root more than the whole job it serves.
  std::map<int32_t, Joined> ranks_;
  std::map<int32_t, SocketAddress> addrs_;
};

}  // namespace

SocketAddress startBootstrapRoot(const SocketAddress& addr, const Secret& secret, int64_t timeoutMs,
                                 int64_t lateGraceMs) {
  SocketAddress bound;
  Socket listener = listenOn(addr, &bound);
  auto root = std::make_shared<Root>(std::move(listener), bound, secret, timeoutMs, lateGraceMs);
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().running[bound.str()] = root;
  }
  try {
    std::thread([root] {
      try {
        root->run();
      } catch (const std::exception& e) {
        WEFT_WARN("bootstrap root failed: %s", e.what());
      }
    }).detach();
  } catch (...) {
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().running.erase(bound.str());
    throw;
  }
  return bound;
}

bool bootstrapRootRunningAt(const SocketAddress& addr) {
  std::lock_guard<std::mutex> lock(registry().mu);
  return registry().running.count(addr.str()) != 0;
}

void endBootstrapRootWait(const SocketAddress& addr) {
  std::shared_ptr<Root> root;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    auto it = registry().running.find(addr.str());
    if (it != registry().running.end()) root = it->second.lock();
  }
  if (root) root->endWait();
}

// The root's answer: the address table when every rank joined, else why not.
std::vector<SocketAddress> readRootReply(int fd, handshake::StreamMac& mac, int rank, int nranks, Deadline deadline,
                                         int64_t timeoutMs, const std::string& rootName, int32_t* jobNonce) {
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
  // The root has answered: the rest of its reply gets time of its own, even
  // when it answered (a timeout, say) just before this rank's deadline.
  const Deadline rest = Deadline::after(std::max<int64_t>(1000, deadline.remainingNs() / 1000000));
  st = tryRecvAll(fd, table.data(), table.size() * sizeof(SocketAddress), rest, StopFlags{}, &err);
  if (st == IoStatus::Ok) st = tryRecvAll(fd, tag, sizeof(tag), rest, StopFlags{}, &err);
  if (st != IoStatus::Ok)
    raise(weftRemoteError, "bootstrap rank %d: %s: reply cut short (%s)", rank, rootName.c_str(), ioStatusName(st));
  if (!mac.verify(&r, sizeof(r), table.data(), table.size() * sizeof(SocketAddress), tag))
    raise(weftRemoteError, "bootstrap rank %d: %s: reply failed its integrity check", rank, rootName.c_str());
  checkRootReply(r, rank, nranks, rootName);
  *jobNonce = r.jobNonce;
  return table;
}


}  // namespace weft
