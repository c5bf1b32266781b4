// Two threads as ranks joined by a socket-transport edge over 127.0.0.1:
// the fixture the socket transport's tests share.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "src/bootstrap/handshake.h"
#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/socket.h"
#include "transports/socket/socket_wire.h"
#include "transports/transport.h"

namespace weft {
namespace socket_test {

constexpr uint64_t kTag = 11;

// Forwards to a real bootstrap; lets a test look at the transport's
// handshake message before the sender gets it.
class TappedBootstrap final : public Bootstrap {
 public:
  explicit TappedBootstrap(Bootstrap& inner) : b_(inner) {}
  std::function<void(const void*, size_t)> onRecv;
  int rank() const override { return b_.rank(); }
  int nranks() const override { return b_.nranks(); }
  const Secret& secret() const override { return b_.secret(); }
  std::string peerAddress(int p) const override { return b_.peerAddress(p); }
  void send(int p, uint64_t t, const void* d, size_t n) override { b_.send(p, t, d, n); }
  void recv(int p, uint64_t t, void* d, size_t n) override {
    b_.recv(p, t, d, n);
    if (onRecv) onRecv(d, n);
  }
  void allGather(void* d, size_t n) override { b_.allGather(d, n); }
  void barrier() override { b_.barrier(); }
  void abort() override { b_.abort(); }
  void setPeerLostHandler(std::function<void(int)> h) override { b_.setPeerLostHandler(std::move(h)); }
  void shutdown() override { b_.shutdown(); }

 private:
  Bootstrap& b_;
};

struct Rank {
  std::unique_ptr<Bootstrap> boot;
  std::unique_ptr<TappedBootstrap> tapped;
  std::vector<PeerInfo> peers{2};
  Doorbell bell;
  std::atomic<bool> abortFlag{false};
  std::mutex errMu;
  std::vector<std::pair<weftResult_t, std::string>> asyncErrors;
  ConnectContext ctx;

  size_t errorCount() {
    std::lock_guard<std::mutex> l(errMu);
    return asyncErrors.size();
  }
};

class SocketTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    unsetenv("WEFT_COMM_ID");
  }

  // Joins two ranks and fills their contexts.
  void join(FifoGeometry g, int64_t timeoutMs = 10000) {
    weftUniqueId id;
    createUniqueId(&id, 10000);
    std::thread t([&] { ranks_[1].boot = Bootstrap::join(id, 1, 2, 10000); });
    ranks_[0].boot = Bootstrap::join(id, 0, 2, 10000);
    t.join();
    for (int r = 0; r < 2; ++r) {
      Rank& k = ranks_[r];
      k.tapped = std::make_unique<TappedBootstrap>(*k.boot);
      k.peers[0].rank = 0;
      k.peers[1].rank = 1;
      k.ctx.bootstrap = k.tapped.get();
      k.ctx.rank = r;
      k.ctx.nranks = 2;
      k.ctx.peers = &k.peers;
      k.ctx.geometry = g;
      k.ctx.localBell = &k.bell;
      k.ctx.secret = k.boot->secret();
      k.ctx.timeoutMs = timeoutMs;
      k.ctx.abortFlag = &k.abortFlag;
      k.ctx.onAsyncError = [&k](weftResult_t c, const std::string& m) {
        std::lock_guard<std::mutex> l(k.errMu);
        k.asyncErrors.push_back({c, m});
      };
    }
  }

  // Receiver (rank 1) first, then sender (rank 0), as the core does.
  void connect() {
    auto transport = makeSocketTransport();
    recvConn_ = transport->connectRecv(ranks_[1].ctx, 0, kTag);
    sendConn_ = transport->connectSend(ranks_[0].ctx, 1, kTag);
  }

  void TearDown() override {
    sendConn_.reset();
    recvConn_.reset();
    std::thread t([&] { ranks_[1].boot.reset(); });
    ranks_[0].boot.reset();
    t.join();
  }

  Rank ranks_[2];
  std::unique_ptr<Connection> sendConn_, recvConn_;
};

// Waits on the executor's doorbell until f() gives a slot, the FIFO fails or
// the deadline passes (nullptr for both).
template <class F>
auto waitSlot(Doorbell* bell, const FifoEnd& end, Deadline d, F f) -> decltype(f()) {
  for (;;) {
    uint32_t seen = bell->seq.load(std::memory_order_acquire);
    if (auto p = f()) return p;
    if (end.failed() || d.passed()) return nullptr;
    sleepOn(bell, seen, 5 * 1000 * 1000);
  }
}

// As the executor waits: while f() gives nothing, let the connection move
// bytes itself (FifoProgress) for a while, then hand over to the proxy and
// sleep on the doorbell.
template <class F>
auto pumpSlot(Doorbell* bell, const FifoEnd& end, uint64_t pieceBytes, Deadline d, F f) -> decltype(f()) {
  int64_t spinUntil = nowNs() + 200 * 1000;
  for (;;) {
    uint32_t seen = bell->seq.load(std::memory_order_acquire);
    if (auto p = f()) return p;
    if (end.failed() || d.passed()) return nullptr;
    if (end.progress && nowNs() < spinUntil) {
      end.progress->tryProgress(pieceBytes);
      continue;
    }
    if (end.progress) end.progress->idle();
    sleepOn(bell, seen, 5 * 1000 * 1000);
    spinUntil = nowNs() + 200 * 1000;
  }
}

}  // namespace socket_test
}  // namespace weft
