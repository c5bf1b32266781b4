#include "src/bootstrap/root.h"

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

using namespace bootstrap_wire;

namespace {

// Addresses of the roots this process serves. Never destroyed: detached
// root threads may still touch it while the process exits.
struct RootRegistry {
  std::mutex mu;
  std::set<std::string> running;
};
RootRegistry& registry() {
  static auto* r = new RootRegistry;
  return *r;
}

class Root {
 public:
  Root(Socket listener, SocketAddress addr, const Secret& secret, int64_t timeoutMs)
      : listener_(std::move(listener)), addr_(addr), secret_(secret), timeoutMs_(timeoutMs),
        deadline_(Deadline::after(timeoutMs)) {}

  void run() {
    WEFT_INFO(kBootstrap, "bootstrap root listening on %s (timeout %ld ms)", addr_.str().c_str(),
              static_cast<long>(timeoutMs_));
    std::vector<std::thread> handlers;
    try {
      for (;;) {
        SocketAddress from;
        Socket s = acceptFrom(listener_, deadline_, StopFlags{&allJoined_, nullptr}, &from);
        if (!s.valid()) break;
        handlers.emplace_back([this, sock = std::move(s), from]() mutable { handle(std::move(sock), from); });
      }
    } catch (const Error& e) {
      WEFT_WARN("bootstrap root at %s: %s", addr_.str().c_str(), e.what());
    }
    finish();
    done_.store(true);
    for (auto& t : handlers) t.join();
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().running.erase(addr_.str());
  }

 private:
  static bool secretMatches(const uint8_t* a, const Secret& b) {
    uint8_t diff = 0;  // no early exit: the comparison takes the same time for any guess
    for (size_t i = 0; i < b.size(); ++i) diff |= a[i] ^ b[i];
    return diff == 0;
  }

  void reply(Socket& s, RootStatus status, int32_t nranks) {
    RootReply r{kRootReplyMagic, status, nranks, 0};
    trySendAll(s.fd(), &r, sizeof(r), Deadline::after(1000), StopFlags{});
  }

  // Reads and checks one hello; keeps the connection if the rank is accepted.
  void handle(Socket s, SocketAddress from) {
    RootHello h;
    Deadline helloDeadline{std::min(deadline_.atNs, Deadline::after(kHelloTimeoutMs).atNs)};
    IoStatus st = tryRecvAll(s.fd(), &h, sizeof(h), helloDeadline, StopFlags{&done_, nullptr});
    const char* reason = nullptr;
    std::string detail;
    if (st != IoStatus::Ok) {
      reason = st == IoStatus::Eof       ? "closed before a complete hello"
               : st == IoStatus::Stopped ? "no hello before the root finished"
                                         : ioStatusName(st);
    } else if (h.magic != kRootHelloMagic) {
      reason = "bad magic (not a weft bootstrap hello)";
    } else if (h.version != kVersion) {
      detail = "version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion);
    } else if (!secretMatches(h.secret, secret_)) {
      reason = "wrong secret (a different unique id?)";
    } else if (h.nranks <= 0 || h.rank < 0 || h.rank >= h.nranks || h.listen.empty()) {
      detail = "claims rank " + std::to_string(h.rank) + " of " + std::to_string(h.nranks);
    }
    if (reason || !detail.empty()) {
      WEFT_WARN("bootstrap: rejected connection from %s: %s", from.str().c_str(), reason ? reason : detail.c_str());
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (nranks_ == 0) {
      nranks_ = h.nranks;
      ranks_.resize(nranks_);
      addrs_.resize(nranks_);
    }
    if (h.nranks != nranks_) {
      lock.unlock();
      WEFT_WARN("bootstrap: rejected connection from %s: rank %d says nranks=%d but earlier ranks said nranks=%d",
                from.str().c_str(), h.rank, h.nranks, nranks_);
      reply(s, kRootNranksMismatch, nranks_);
      return;
    }
    if (ranks_[h.rank].valid()) {
      lock.unlock();
      WEFT_WARN("bootstrap: rejected connection from %s: rank %d already joined", from.str().c_str(), h.rank);
      reply(s, kRootDuplicateRank, nranks_);
      return;
    }
    WEFT_TRACE(kBootstrap, "bootstrap root: rank %d/%d joined from %s, listens on %s", h.rank, h.nranks,
               from.str().c_str(), h.listen.str().c_str());
    ranks_[h.rank] = std::move(s);
    addrs_[h.rank] = h.listen;
    if (++joined_ == nranks_) allJoined_.store(true);
  }

  // Answers every rank that joined: the table when all did, else a timeout.
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (nranks_ > 0 && joined_ == nranks_) {
      for (auto& s : ranks_) {
        RootReply r{kRootReplyMagic, kRootOk, nranks_, 0};
        Deadline d = Deadline::after(timeoutMs_);
        if (trySendTwo(s.fd(), &r, sizeof(r), addrs_.data(), addrs_.size() * sizeof(SocketAddress), d,
                       StopFlags{}) != IoStatus::Ok)
          WEFT_WARN("bootstrap root at %s: could not send the address table to a rank", addr_.str().c_str());
      }
      WEFT_INFO(kBootstrap, "bootstrap root at %s: all %d ranks joined", addr_.str().c_str(), nranks_);
      return;
    }
    std::string missing;
    for (int r = 0; r < nranks_; ++r)
      if (!ranks_[r].valid()) missing += (missing.empty() ? "" : ",") + std::to_string(r);
    WEFT_WARN("bootstrap root at %s: timed out after %ld ms with %d of %d ranks joined (missing: %s)",
              addr_.str().c_str(), static_cast<long>(timeoutMs_), joined_, nranks_,
              nranks_ ? missing.c_str() : "all");
    for (auto& s : ranks_)
      if (s.valid()) reply(s, kRootTimedOut, nranks_);
  }

  Socket listener_;
  SocketAddress addr_;
  Secret secret_;
  int64_t timeoutMs_;
  Deadline deadline_;
  std::atomic<bool> allJoined_{false};
  std::atomic<bool> done_{false};
  std::mutex mu_;
  int32_t nranks_ = 0;
  int32_t joined_ = 0;
  std::vector<Socket> ranks_;
  std::vector<SocketAddress> addrs_;
};

}  // namespace

SocketAddress startBootstrapRoot(const SocketAddress& addr, const Secret& secret, int64_t timeoutMs) {
  SocketAddress bound;
  Socket listener = listenOn(addr, &bound);
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    registry().running.insert(bound.str());
  }
  auto root = std::make_shared<Root>(std::move(listener), bound, secret, timeoutMs);
  std::thread([root] {
    try {
      root->run();
    } catch (const std::exception& e) {
      WEFT_WARN("bootstrap root failed: %s", e.what());
    }
  }).detach();
  return bound;
}

bool bootstrapRootRunningAt(const SocketAddress& addr) {
  std::lock_guard<std::mutex> lock(registry().mu);
  return registry().running.count(addr.str()) != 0;
}

}  // namespace weft
