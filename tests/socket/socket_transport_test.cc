// Two threads as ranks build a socket-transport edge over 127.0.0.1 and
// stream bytes through it as producer and consumer.
#include "socket_fixture.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "transports/socket/socket_wire.h"

namespace weft {
namespace socket_test {
namespace {

// Slot sizes vary (including empty slots and full ones) to check that each
// slot arrives with its own size.
uint64_t slotSizeFor(uint64_t i, uint64_t slotBytes) {
  switch (i % 5) {
    case 0: return slotBytes;
    case 1: return (i * 7919) % slotBytes;
    case 2: return 1;
    case 3: return slotBytes - 64;
    default: return i % 11 == 0 ? 0 : slotBytes / 2 + 3;
  }
}

// Streams `total` bytes from rank 0 to rank 1; returns seconds taken.
double stream(Rank* ranks, Connection& sc, Connection& rc, uint64_t total, bool varySizes) {
  std::vector<uint8_t> src(total);
  std::mt19937_64 rng(1234);
  for (uint64_t i = 0; i + 8 <= total; i += 8) {
    uint64_t v = rng();
    memcpy(src.data() + i, &v, 8);
  }
  FifoEnd out = sc.fifo(), in = rc.fifo();
  const uint64_t slotBytes = out.slotBytes();
  auto t0 = std::chrono::steady_clock::now();
  std::thread producer([&] {
    uint64_t sent = 0;
    for (uint64_t i = 0; sent < total; ++i) {
      uint64_t n = std::min(varySizes ? slotSizeFor(i, slotBytes) : slotBytes, total - sent);
      void* slot = waitSlot(&ranks[0].bell, out, Deadline::after(10000), [&] { return out.tryAcquire(); });
      ASSERT_NE(slot, nullptr) << "producer stuck at slot " << i;
      memcpy(slot, src.data() + sent, n);
      out.post(n);
      sent += n;
    }
  });
  uint64_t got = 0;
  for (uint64_t i = 0; got < total; ++i) {
    uint64_t n = 0;
    const void* slot =
        waitSlot(&ranks[1].bell, in, Deadline::after(10000), [&] { return in.tryPeek(&n); });
    if (!slot) {
      ADD_FAILURE() << "consumer stuck at slot " << i;
      break;
    }
    uint64_t expect = std::min(varySizes ? slotSizeFor(i, slotBytes) : slotBytes, total - got);
    if (n != expect || memcmp(slot, src.data() + got, n) != 0) {
      ADD_FAILURE() << "slot " << i << ": " << n << " bytes (expected " << expect << "), or content differs";
      break;
    }
    got += n;
    in.release();
  }
  producer.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST_F(SocketTransportTest, StreamsBytesIntact) {
  for (const char* nsocks : {"1", "3"}) {
    setenv("WEFT_SOCKET_NSOCKS", nsocks, 1);
    join({128 * 1024, 4});
    connect();
    EXPECT_EQ(sendConn_->describe(), "NET/Socket/lo");
    EXPECT_EQ(recvConn_->describe(), "NET/Socket/lo");
    stream(ranks_, *sendConn_, *recvConn_, 10 << 20, true);
    EXPECT_FALSE(sendConn_->fifo().failed());
    EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
    TearDown();
  }
  unsetenv("WEFT_SOCKET_NSOCKS");
}

// Both ends move bytes themselves where the connection lets them (pieces up
// to 32 KB), the proxies the rest; sizes alternate between the two regimes
// so that the hand-over between executor and proxy happens all the time.
// Sizes around kHeadPayload check the padded parts on socket 0 (a header
// read with the start of its payload must never take the next header).
TEST_F(SocketTransportTest, ExecutorMovesSmallPiecesProxyTheRest) {
  join({128 * 1024, 4});
  connect();
  FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
  ASSERT_NE(out.progress, nullptr);
  ASSERT_NE(in.progress, nullptr);
  const uint64_t slotBytes = out.slotBytes();
  auto sizeOf = [&](uint64_t i) -> uint64_t {
    switch (i % 7) {
      case 0: return 8;
      case 1: return 32 * 1024;
      case 2: return slotBytes;
      case 3: return socket_wire::kHeadPayload - 1;
      case 4: return socket_wire::kHeadPayload;
      case 5: return socket_wire::kHeadPayload + 1;
      default: return (i * 7919) % slotBytes;
    }
  };
  constexpr uint64_t kSlots = 3000;
  auto byteOf = [](uint64_t i, uint64_t k) { return static_cast<uint8_t>(i * 131 + k * 7); };
  std::thread producer([&] {
    for (uint64_t i = 0; i < kSlots; ++i) {
      const uint64_t n = sizeOf(i);
      auto* slot = static_cast<uint8_t*>(
          pumpSlot(&ranks_[0].bell, out, n, Deadline::after(10000), [&] { return out.tryAcquire(); }));
      ASSERT_NE(slot, nullptr) << "producer stuck at slot " << i;
      for (uint64_t k = 0; k < n; ++k) slot[k] = byteOf(i, k);
      out.post(n);
    }
  });
  for (uint64_t i = 0; i < kSlots; ++i) {
    uint64_t n = 0;
    const uint64_t expect = sizeOf(i);
    auto* slot = static_cast<const uint8_t*>(
        pumpSlot(&ranks_[1].bell, in, expect, Deadline::after(10000), [&] { return in.tryPeek(&n); }));
    if (!slot) {
      ADD_FAILURE() << "consumer stuck at slot " << i;
      break;
    }
    ASSERT_EQ(n, expect) << "slot " << i;
    for (uint64_t k = 0; k < n; ++k)
      if (slot[k] != byteOf(i, k)) {
        ADD_FAILURE() << "slot " << i << " byte " << k << " differs";
        break;
      }
    in.release();
  }
  producer.join();
  EXPECT_FALSE(out.failed());
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

TEST_F(SocketTransportTest, InlineOffLeavesEverythingToTheProxies) {
  setenv("WEFT_SOCKET_INLINE", "0", 1);
  join({128 * 1024, 4});
  connect();
  unsetenv("WEFT_SOCKET_INLINE");
  EXPECT_EQ(sendConn_->fifo().progress, nullptr);
  EXPECT_EQ(recvConn_->fifo().progress, nullptr);
  stream(ranks_, *sendConn_, *recvConn_, 4 << 20, true);
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

// More ranks than cores: the executor moves small pieces itself as it
// does otherwise (its wait polls them once per yield), and the receiving
// proxy, which then sleeps in poll() without yielding first, takes over the
// large ones and those of an executor gone to sleep; every size arrives
// intact.
TEST_F(SocketTransportTest, OversubscribedExecutorAndProxiesShareTheWork) {
  join({128 * 1024, 4});
  for (Rank& r : ranks_) r.ctx.oversubscribed = true;
  connect();
  EXPECT_NE(sendConn_->fifo().progress, nullptr);
  EXPECT_NE(recvConn_->fifo().progress, nullptr);
  stream(ranks_, *sendConn_, *recvConn_, 4 << 20, true);
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

// Under two cores per rank the executor moves every piece itself, the
// largest slots too, and the proxies only take over from an executor gone
// to sleep; every size arrives intact.
TEST_F(SocketTransportTest, RanksFillingTheCoresMoveEveryPieceInline) {
  join({128 * 1024, 4});
  for (Rank& r : ranks_) r.ctx.ranksFillCores = true;
  connect();
  EXPECT_NE(sendConn_->fifo().progress, nullptr);
  EXPECT_NE(recvConn_->fifo().progress, nullptr);
  stream(ranks_, *sendConn_, *recvConn_, 4 << 20, true);
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

TEST_F(SocketTransportTest, Throughput64MB) {
  join({512 * 1024, 8});
  connect();
  double s = 1e9;
  for (int round = 0; round < 3; ++round) s = std::min(s, stream(ranks_, *sendConn_, *recvConn_, 64 << 20, false));
  printf("[ socket ] 64 MiB in %.3f s (best of 3): %.2f GB/s (%s sockets)\n", s, 64.0 * (1 << 20) / s / 1e9,
         getenv("WEFT_SOCKET_NSOCKS") ? getenv("WEFT_SOCKET_NSOCKS") : "2");
  // A loose floor that still catches a path doing per-slot round trips.
  EXPECT_LT(s, 5.0);
}

TEST_F(SocketTransportTest, SenderGoneMidStreamFailsReceiver) {
  join({64 * 1024, 4});
  connect();
  FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
  // Fill everything (receiver FIFO, socket buffers, sender FIFO) until the
  // producer stalls: the sender's proxy is then blocked mid-stream.
  uint64_t posted = 0;
  for (;;) {
    void* slot = waitSlot(&ranks_[0].bell, out, Deadline::after(300), [&] { return out.tryAcquire(); });
    if (!slot) break;
    memset(slot, static_cast<int>(posted & 0xff), out.slotBytes());
    out.post(out.slotBytes());
    ++posted;
    ASSERT_LT(posted, 100000u) << "producer never stalled";
  }
  auto t0 = std::chrono::steady_clock::now();
  sendConn_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << "sender teardown hung";
  uint64_t consumed = 0;
  for (;;) {
    uint64_t n = 0;
    const void* slot = waitSlot(&ranks_[1].bell, in, Deadline::after(5000), [&] { return in.tryPeek(&n); });
    if (!slot) break;
    ASSERT_EQ(static_cast<const uint8_t*>(slot)[n - 1], consumed & 0xff);
    in.release();
    ++consumed;
  }
  EXPECT_TRUE(in.failed());
  EXPECT_LT(consumed, posted);
  ASSERT_EQ(ranks_[1].errorCount(), 1u);
  EXPECT_EQ(ranks_[1].asyncErrors[0].first, weftRemoteError);
  EXPECT_NE(ranks_[1].asyncErrors[0].second.find("rank 0"), std::string::npos) << ranks_[1].asyncErrors[0].second;
}

TEST_F(SocketTransportTest, OrderlyTeardownReportsNothing) {
  join({64 * 1024, 4});
  connect();
  stream(ranks_, *sendConn_, *recvConn_, 1 << 20, true);
  auto t0 = std::chrono::steady_clock::now();
  sendConn_.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  recvConn_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

// A collective is complete on the sending rank once its last slot is
// posted, so the communicator may be destroyed before the proxy sent it:
// the posted slots still arrive, followed by an orderly end.
TEST_F(SocketTransportTest, SlotsPostedRightBeforeTeardownStillArrive) {
  for (const char* nsocks : {"1", "2"}) {
    setenv("WEFT_SOCKET_NSOCKS", nsocks, 1);
    join({256 * 1024, 4});
    connect();
    FifoEnd out = sendConn_->fifo(), in = recvConn_->fifo();
    const uint64_t sizes[] = {8, 200 * 1024, 4};  // small, split across sockets, small
    for (uint64_t i = 0; i < 3; ++i) {
      void* slot = waitSlot(&ranks_[0].bell, out, Deadline::after(2000), [&] { return out.tryAcquire(); });
      ASSERT_NE(slot, nullptr);
      memset(slot, static_cast<int>(0x40 + i), sizes[i]);
      out.post(sizes[i]);
    }
    sendConn_.reset();
    for (uint64_t i = 0; i < 3; ++i) {
      uint64_t n = 0;
      const void* slot = waitSlot(&ranks_[1].bell, in, Deadline::after(3000), [&] { return in.tryPeek(&n); });
      ASSERT_NE(slot, nullptr) << "slot " << i << " lost (" << nsocks << " sockets)";
      ASSERT_EQ(n, sizes[i]);
      EXPECT_EQ(static_cast<const uint8_t*>(slot)[n - 1], 0x40 + i);
      in.release();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(in.failed());
    EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
    TearDown();
  }
  unsetenv("WEFT_SOCKET_NSOCKS");
}

TEST_F(SocketTransportTest, StraySocketsAreRejected) {
  join({64 * 1024, 4});
  auto transport = makeSocketTransport();
  recvConn_ = transport->connectRecv(ranks_[1].ctx, 0, kTag);
  ranks_[0].tapped->onRecv = [](const void* d, size_t n) {
    socket_wire::ConnectInfo info;
    ASSERT_EQ(n, sizeof(info));
    memcpy(&info, d, n);
    auto stray = [&](const void* bytes, size_t len) {
      Socket s = connectTo(info.addr, Deadline::after(2000), StopFlags{}, false);
      if (len) sendAll(s.fd(), bytes, len, Deadline::after(2000), StopFlags{}, "stray");
    };
    std::string garbage(300, 'Z');
    stray(garbage.data(), garbage.size());
    // A handshake with a made-up proof, then a hello with the right nonce.
    handshake::Challenge c{handshake::kChallengeMagic, handshake::kVersion,
                           static_cast<uint32_t>(handshake::Purpose::kSocketData), 0, {}};
    handshake::Proof proof{};
    socket_wire::SocketHello h{};
    h.magic = socket_wire::kHelloMagic;
    h.version = socket_wire::kVersion;
    h.nonce = info.nonce;
    std::string forged(reinterpret_cast<const char*>(&c), sizeof(c));
    forged.append(reinterpret_cast<const char*>(&proof), sizeof(proof));
    forged.append(reinterpret_cast<const char*>(&h), sizeof(h));
    stray(forged.data(), forged.size());
    stray(&c, 10);  // too short
    // A client holding another secret that runs the handshake honestly.
    Socket honest = connectTo(info.addr, Deadline::after(2000), StopFlags{}, false);
    Secret other;
    other.fill(3);
    EXPECT_THROW(handshake::connectSide(honest.fd(), other, handshake::Purpose::kSocketData, Deadline::after(2000),
                                        StopFlags{}, "receiver"),
                 Error);
  };
  sendConn_ = transport->connectSend(ranks_[0].ctx, 1, kTag);
  stream(ranks_, *sendConn_, *recvConn_, 2 << 20, true);
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

// Connects that never finish their handshake (silent, or stalled after a
// partial challenge) each have their own bound and are run side by side, so
// 300 of them ahead of the real sockets delay nothing: with handshakes taken
// one at a time (2 s each) they would outlast the 8 s accept deadline.
TEST_F(SocketTransportTest, SilentConnectsDoNotDelayTheRealSockets) {
  join({64 * 1024, 4}, /*timeoutMs=*/8000);
  auto transport = makeSocketTransport();
  recvConn_ = transport->connectRecv(ranks_[1].ctx, 0, kTag);
  std::vector<Socket> silent;
  ranks_[0].tapped->onRecv = [&](const void* d, size_t n) {
    socket_wire::ConnectInfo info;
    ASSERT_EQ(n, sizeof(info));
    memcpy(&info, d, n);
    handshake::Challenge c{handshake::kChallengeMagic, handshake::kVersion,
                           static_cast<uint32_t>(handshake::Purpose::kSocketData), 0, {}};
    for (int i = 0; i < 300; ++i) {
      silent.push_back(connectTo(info.addr, Deadline::after(2000), StopFlags{}, false));
      if (i % 2) sendAll(silent.back().fd(), &c, 10, Deadline::after(2000), StopFlags{}, "stalled");
    }
  };
  const int64_t t0 = nowNs();
  sendConn_ = transport->connectSend(ranks_[0].ctx, 1, kTag);
  stream(ranks_, *sendConn_, *recvConn_, 1 << 20, true);
  const int64_t ms = (nowNs() - t0) / 1000000;
  EXPECT_EQ(silent.size(), 300u);
  // Generous for a loaded machine; taken one at a time they would need 600 s.
  EXPECT_LT(ms, 7000) << "the real sockets waited behind the silent ones";
  EXPECT_EQ(ranks_[0].errorCount() + ranks_[1].errorCount(), 0u);
}

TEST_F(SocketTransportTest, MissingSenderTimesOut) {
  join({64 * 1024, 4}, /*timeoutMs=*/300);
  auto transport = makeSocketTransport();
  recvConn_ = transport->connectRecv(ranks_[1].ctx, 0, kTag);
  FifoEnd in = recvConn_->fifo();
  uint64_t n;
  EXPECT_EQ(waitSlot(&ranks_[1].bell, in, Deadline::after(3000), [&] { return in.tryPeek(&n); }), nullptr);
  EXPECT_TRUE(in.failed());
  ASSERT_EQ(ranks_[1].errorCount(), 1u);
  EXPECT_EQ(ranks_[1].asyncErrors[0].first, weftRemoteError);
  // Drain the handshake message nobody consumed.
  socket_wire::ConnectInfo info;
  ranks_[0].boot->recv(1, kTag, &info, sizeof(info));
}

TEST_F(SocketTransportTest, AbortStopsProxiesWithoutAsyncError) {
  join({64 * 1024, 4});
  connect();
  FifoEnd in = recvConn_->fifo();
  ranks_[1].abortFlag.store(true);
  uint64_t n;
  EXPECT_EQ(waitSlot(&ranks_[1].bell, in, Deadline::after(3000), [&] { return in.tryPeek(&n); }), nullptr);
  EXPECT_TRUE(in.failed());
  EXPECT_EQ(ranks_[1].errorCount(), 0u);
}

}  // namespace
}  // namespace socket_test
}  // namespace weft
