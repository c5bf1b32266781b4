// Threads as ranks: every rank joins over 127.0.0.1 inside this process.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/root.h"
#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "src/util/socket.h"

namespace weft {
namespace {

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    unsetenv("WEFT_COMM_ID");
  }
};

// Runs fn(rank, bootstrap) on nranks threads after they all joined.
void runRanks(int nranks, int64_t timeoutMs, const std::function<void(int, Bootstrap&)>& fn,
              const weftUniqueId* givenId = nullptr, bool skipFinalBarrier = false) {
  weftUniqueId id;
  if (givenId) id = *givenId;
  else createUniqueId(&id, timeoutMs);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(nranks);
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto b = Bootstrap::join(id, r, nranks, timeoutMs);
        ASSERT_EQ(b->rank(), r);
        ASSERT_EQ(b->nranks(), nranks);
        fn(r, *b);
        if (!skipFinalBarrier) b->barrier();  // nobody leaves while others still send to it
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < nranks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST_F(BootstrapTest, JoinAllGatherAndBarrier) {
  for (int nranks : {1, 2, 3, 8}) {
    runRanks(nranks, 10000, [nranks](int rank, Bootstrap& b) {
      std::vector<uint64_t> blocks(nranks * 2, 0);
      blocks[rank * 2] = 1000 + rank;
      blocks[rank * 2 + 1] = 7u * rank;
      b.allGather(blocks.data(), 2 * sizeof(uint64_t));
      for (int p = 0; p < nranks; ++p) {
        EXPECT_EQ(blocks[p * 2], 1000u + p);
        EXPECT_EQ(blocks[p * 2 + 1], 7u * p);
      }
      b.barrier();
      b.allGather(blocks.data(), 2 * sizeof(uint64_t));  // a second round must not mix with the first
      EXPECT_EQ(blocks[0], 1000u);
    });
  }
}

TEST_F(BootstrapTest, SendRecvTagsOutOfOrder) {
  runRanks(3, 10000, [](int rank, Bootstrap& b) {
    int next = (rank + 1) % 3, prev = (rank + 2) % 3;
    for (uint64_t tag = 1; tag <= 5; ++tag) {
      std::vector<int> msg(tag * 100, rank * 10 + int(tag));
      b.send(next, tag, msg.data(), msg.size() * sizeof(int));
    }
    b.send(next, 9, "x", 0);  // empty messages are messages
    for (uint64_t tag = 5; tag >= 1; --tag) {
      std::vector<int> msg(tag * 100);
      b.recv(prev, tag, msg.data(), msg.size() * sizeof(int));
      for (int v : msg) ASSERT_EQ(v, prev * 10 + int(tag));
    }
    b.recv(prev, 9, nullptr, 0);
    int self = 42, back = 0;
    b.send(rank, 77, &self, sizeof(self));
    b.recv(rank, 77, &back, sizeof(back));
    EXPECT_EQ(back, 42);
  });
}

TEST_F(BootstrapTest, RecvWithWrongSizeIsInternalError) {
  runRanks(2, 10000, [](int rank, Bootstrap& b) {
    int v = 1;
    b.send(1 - rank, 3, &v, sizeof(v));
    int64_t w = 0;
    try {
      b.recv(1 - rank, 3, &w, sizeof(w));
      ADD_FAILURE() << "size mismatch not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), weftInternalError);
    }
  });
}

// Sends `bytes` to addr from a raw TCP client and closes.
void strayClient(const SocketAddress& addr, const void* bytes, size_t n) {
  Socket s = connectTo(addr, Deadline::after(2000), StopFlags{}, false);
  if (n) sendAll(s.fd(), bytes, n, Deadline::after(2000), StopFlags{}, "stray");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

SocketAddress rootOf(const weftUniqueId& id) {
  bootstrap_wire::UniqueIdLayout l;
  memcpy(&l, id.internal, sizeof(l));
  return l.root;
}

// A client that holds a different secret and runs the handshake honestly:
// the listener's proof fails for it, so it never sends its own.
void wrongSecretClient(const SocketAddress& addr, handshake::Purpose purpose) {
  Socket s = connectTo(addr, Deadline::after(2000), StopFlags{}, false);
  Secret wrong;
  wrong.fill(0xAB);
  try {
    handshake::connectSide(s.fd(), wrong, purpose, Deadline::after(2000), StopFlags{}, "listener");
    ADD_FAILURE() << "the listener proved a secret it does not hold";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftRemoteError) << e.what();
    EXPECT_NE(std::string(e.what()).find("failed to prove"), std::string::npos) << e.what();
  }
}

// A client that sends a challenge and a made-up proof without reading the
// answer (what a replayed or guessed handshake looks like to the listener).
void forgedProofClient(const SocketAddress& addr, handshake::Purpose purpose) {
  handshake::Challenge c{handshake::kChallengeMagic, handshake::kVersion, static_cast<uint32_t>(purpose), 0, {}};
  memset(c.nonce, 7, sizeof(c.nonce));
  handshake::Proof p;
  memset(p.mac, 0x5a, sizeof(p.mac));
  char both[sizeof(c) + sizeof(p)];
  memcpy(both, &c, sizeof(c));
  memcpy(both + sizeof(c), &p, sizeof(p));
  strayClient(addr, both, sizeof(both));
}

TEST_F(BootstrapTest, StrayClientsAndWrongSecretAreRejected) {
  weftUniqueId id;
  createUniqueId(&id, 10000);
  SocketAddress root = rootOf(id);
  // Garbage, a too-short challenge, a silent client, a wrong secret and a
  // forged proof at the root.
  std::string garbage(200, 'G');
  strayClient(root, garbage.data(), garbage.size());
  strayClient(root, "WF", 2);
  Socket silent = connectTo(root, Deadline::after(2000), StopFlags{}, false);
  wrongSecretClient(root, handshake::Purpose::kRoot);
  forgedProofClient(root, handshake::Purpose::kRoot);
  forgedProofClient(root, handshake::Purpose::kPeer);  // a handshake meant for another kind of listener

  // A rank with a wrong secret (same root address) is turned away, visibly.
  weftUniqueId forged = id;
  bootstrap_wire::UniqueIdLayout l;
  memcpy(&l, forged.internal, sizeof(l));
  l.secret[0] ^= 0xFF;
  memcpy(forged.internal, &l, sizeof(l));
  try {
    Bootstrap::join(forged, 1, 2, 3000);
    ADD_FAILURE() << "forged id joined";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftRemoteError) << e.what();
  }

  runRanks(
      2, 10000,
      [&](int rank, Bootstrap& b) {
        if (rank == 0) {
          SocketAddress peerListen = SocketAddress::parse(b.peerAddress(1), "rank 1");
          strayClient(peerListen, garbage.data(), garbage.size());
          strayClient(peerListen, nullptr, 0);
          wrongSecretClient(peerListen, handshake::Purpose::kPeer);
          forgedProofClient(peerListen, handshake::Purpose::kPeer);
          int token = 5;
          b.send(1, 2, &token, sizeof(token));
        } else {
          int token = 0;
          b.recv(0, 2, &token, sizeof(token));
          EXPECT_EQ(token, 5);
        }
        b.barrier();
      },
      &id);
}

int openDescriptors() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.is_symlink() ? 1 : 0;
  return n;
}

// Rejected connections give back their descriptor and thread: a flood of
// them leaves a rank's descriptor count where it was.
TEST_F(BootstrapTest, FloodOfRejectedConnectionsLeavesNothingBehind) {
  runRanks(2, 20000, [](int rank, Bootstrap& b) {
    if (rank == 0) {
      SocketAddress peerListen = SocketAddress::parse(b.peerAddress(1), "rank 1");
      std::string garbage(64, 'G');
      strayClient(peerListen, garbage.data(), garbage.size());
      const int before = openDescriptors();
      for (int i = 0; i < 400; ++i) {
        Socket s = connectTo(peerListen, Deadline::after(2000), StopFlags{}, false);
        sendAll(s.fd(), garbage.data(), garbage.size(), Deadline::after(2000), StopFlags{}, "stray");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      strayClient(peerListen, garbage.data(), garbage.size());  // the accept that prunes the last ones
      const int after = openDescriptors();
      EXPECT_LT(after - before, 16) << before << " descriptors before the flood, " << after << " after";
    }
    int token = rank + 1;
    b.send(1 - rank, 4, &token, sizeof(token));
    b.recv(1 - rank, 4, &token, sizeof(token));
    EXPECT_EQ(token, 2 - rank);
  });
}

int threadsInProcess() {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f) fclose(f);
  return n;
}

// Every rank sends to every other, several rounds with one tag, with at most
// three outgoing connections each: connections are retired and reopened
// all the time, yet every message arrives, in order, and the descriptors
// and threads of the process stay bounded by the limit (one inbox thread
// per rank), not by the number of peers.
TEST_F(BootstrapTest, ConnectionsStayBoundedAndInOrderUnderChurn) {
  setenv("WEFT_BOOTSTRAP_MAX_CONNS", "3", 1);
  constexpr int kRanks = 24, kRounds = 3;
  const int fdsBefore = openDescriptors(), threadsBefore = threadsInProcess();
  std::atomic<int> joined{0}, maxFds{0}, maxThreads{0};
  runRanks(kRanks, 20000, [&](int rank, Bootstrap& b) {
    joined++;
    for (int round = 0; round < kRounds; ++round)
      for (int i = 1; i < kRanks; ++i) {
        int32_t msg[2] = {rank, round};
        b.send((rank + i) % kRanks, 9, msg, sizeof(msg));
      }
    for (int round = 0; round < kRounds; ++round)
      for (int p = 0; p < kRanks; ++p) {
        if (p == rank) continue;
        int32_t msg[2];
        b.recv(p, 9, msg, sizeof(msg));
        EXPECT_EQ(msg[0], p);
        EXPECT_EQ(msg[1], round) << "from rank " << p << " out of order";
      }
    int fds = openDescriptors(), threads = threadsInProcess();
    for (int m = maxFds.load(); fds > m && !maxFds.compare_exchange_weak(m, fds);) {}
    for (int m = maxThreads.load(); threads > m && !maxThreads.compare_exchange_weak(m, threads);) {}
    std::vector<int32_t> all(kRanks);
    all[rank] = rank * 3;
    b.allGather(all.data(), sizeof(int32_t));
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(all[r], r * 3);
  });
  unsetenv("WEFT_BOOTSTRAP_MAX_CONNS");
  EXPECT_EQ(joined.load(), kRanks);
  // Per rank: its listener, its inbox's eventfd, at most 3 outgoing and (on
  // average) 3 incoming ends; a connection to every peer would be 2 x 23.
  EXPECT_LE(maxFds.load() - fdsBefore, kRanks * 9) << "descriptors grew with the peers, not the limit";
  // Per rank: its application thread and its inbox thread.
  EXPECT_LE(maxThreads.load() - threadsBefore, kRanks * 2 + 2);
}

// At most WEFT_BOOTSTRAP_MAX_INCOMING connections into a rank: every rank
// sends to every other at once (the AllToAll handshakes' pattern), senders
// past the bound wait in the backlog while the receiver asks idle ones to
// retire, and every message still arrives, in order.
TEST_F(BootstrapTest, IncomingConnectionsStayWithinTheBound) {
  setenv("WEFT_BOOTSTRAP_MAX_CONNS", "3", 1);
  setenv("WEFT_BOOTSTRAP_MAX_INCOMING", "4", 1);
  constexpr int kRanks = 16, kRounds = 2;
  std::atomic<size_t> peak{0};
  runRanks(kRanks, 30000, [&](int rank, Bootstrap& b) {
    for (int round = 0; round < kRounds; ++round)
      for (int i = 1; i < kRanks; ++i) {
        int32_t msg[2] = {rank, round};
        b.send((rank + i) % kRanks, 9, msg, sizeof(msg));
      }
    for (int round = 0; round < kRounds; ++round)
      for (int p = 0; p < kRanks; ++p) {
        if (p == rank) continue;
        int32_t msg[2];
        b.recv(p, 9, msg, sizeof(msg));
        EXPECT_EQ(msg[0], p);
        EXPECT_EQ(msg[1], round) << "from rank " << p << " out of order";
      }
    b.barrier();
    const size_t mine = b.peakIncomingConnections();
    for (size_t m = peak.load(); mine > m && !peak.compare_exchange_weak(m, mine);) {}
  });
  unsetenv("WEFT_BOOTSTRAP_MAX_CONNS");
  unsetenv("WEFT_BOOTSTRAP_MAX_INCOMING");
  EXPECT_GT(peak.load(), 0u);
  EXPECT_LE(peak.load(), 4u) << "a rank held more connections in than the bound";
}

// Senders that went quiet (their application threads blocked, waiting for
// an answer) hold the full rank's places: only their inbox threads can
// retire them when asked, which lets the waiting senders in.
TEST_F(BootstrapTest, AFullRankGetsIdleSendersToRetire) {
  setenv("WEFT_BOOTSTRAP_MAX_INCOMING", "4", 1);
  constexpr int kRanks = 10;
  runRanks(kRanks, 30000, [&](int rank, Bootstrap& b) {
    int32_t token = rank;
    if (rank != 0) {
      b.send(0, 5, &token, sizeof(token));
      b.recv(0, 6, &token, sizeof(token));
      EXPECT_EQ(token, rank * 2);
      return;
    }
    for (int p = 1; p < kRanks; ++p) {
      b.recv(p, 5, &token, sizeof(token));
      EXPECT_EQ(token, p);
    }
    for (int p = 1; p < kRanks; ++p) {
      token = p * 2;
      b.send(p, 6, &token, sizeof(token));
    }
    EXPECT_LE(b.peakIncomingConnections(), 4u);
  });
  unsetenv("WEFT_BOOTSTRAP_MAX_INCOMING");
}

TEST_F(BootstrapTest, IncomingBoundBelowFourIsRefused) {
  setenv("WEFT_BOOTSTRAP_MAX_INCOMING", "3", 1);
  weftUniqueId id;
  createUniqueId(&id, 2000);
  try {
    Bootstrap::join(id, 0, 1, 2000);
    ADD_FAILURE() << "a bound of 3 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("WEFT_BOOTSTRAP_MAX_INCOMING"), std::string::npos) << e.what();
  }
  unsetenv("WEFT_BOOTSTRAP_MAX_INCOMING");
}

// Silent connects hold a descriptor each until their 5 s bound, but no
// thread, and the real peers' messages pass them at once (while they stay
// below WEFT_BOOTSTRAP_MAX_INCOMING: at the bound, the next connection
// waits for a place, up to their 5 s).
TEST_F(BootstrapTest, SilentConnectsHoldNoThreadAndDelayNobody) {
  setenv("WEFT_BOOTSTRAP_MAX_INCOMING", "1000", 1);
  runRanks(2, 20000, [](int rank, Bootstrap& b) {
    if (rank == 0) {
      SocketAddress peerListen = SocketAddress::parse(b.peerAddress(1), "rank 1");
      const int threadsBefore = threadsInProcess();
      std::vector<Socket> silent;
      for (int i = 0; i < 300; ++i) silent.push_back(connectTo(peerListen, Deadline::after(2000), StopFlags{}, false));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      EXPECT_LT(threadsInProcess() - threadsBefore, 4) << "silent connects took threads";
      const auto t0 = std::chrono::steady_clock::now();
      int token = 5;
      b.send(1, 4, &token, sizeof(token));
      b.recv(1, 4, &token, sizeof(token));
      EXPECT_EQ(token, 6);
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << "waited behind silent connects";
    } else {
      int token;
      b.recv(0, 4, &token, sizeof(token));
      token++;
      b.send(0, 4, &token, sizeof(token));
    }
  });
  unsetenv("WEFT_BOOTSTRAP_MAX_INCOMING");
}

TEST_F(BootstrapTest, ConnectionLimitBelowTheTreeIsRefused) {
  setenv("WEFT_BOOTSTRAP_MAX_CONNS", "2", 1);
  weftUniqueId id;
  createUniqueId(&id, 2000);
  try {
    Bootstrap::join(id, 0, 1, 2000);
    ADD_FAILURE() << "a limit of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("WEFT_BOOTSTRAP_MAX_CONNS"), std::string::npos) << e.what();
  }
  unsetenv("WEFT_BOOTSTRAP_MAX_CONNS");
}

TEST_F(BootstrapTest, MissingRankTimesOutWithinBound) {
  weftUniqueId id;
  createUniqueId(&id, 400);
  std::vector<std::thread> threads;
  std::atomic<int> timeouts{0};
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r) {  // rank 2 of 3 never comes
    threads.emplace_back([&, r] {
      try {
        Bootstrap::join(id, r, 3, 400);
      } catch (const Error& e) {
        if (e.code() == weftTimeout) timeouts++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(timeouts.load(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

// A caller that knows no further rank will come ends the root's waits
// itself: the rank that joined hears "timed out" at once, not after the
// root's minute, and the root is gone once its late grace is ended too.
TEST_F(BootstrapTest, EndingTheRootsWaitsAnswersAtOnce) {
  const Secret secret{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
  SocketAddress any = SocketAddress::parse("127.0.0.1:1", "test");
  any.setPort(0);
  const SocketAddress root = startBootstrapRoot(any, secret, 60000, 60000);
  weftUniqueId id{};
  bootstrap_wire::UniqueIdLayout l{bootstrap_wire::kIdMagic, bootstrap_wire::kVersion, 0, root, {}};
  memcpy(l.secret, secret.data(), sizeof(l.secret));
  memcpy(id.internal, &l, sizeof(l));
  const auto t0 = std::chrono::steady_clock::now();
  weftResult_t code = weftSuccess;
  std::thread rank0([&] {
    try {
      Bootstrap::join(id, 0, 2, 60000);  // rank 1 never comes
    } catch (const Error& e) {
      code = e.code();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  endBootstrapRootWait(root);  // the wait for ranks
  rank0.join();
  EXPECT_EQ(code, weftTimeout);
  EXPECT_TRUE(bootstrapRootRunningAt(root));  // still serving late ranks
  endBootstrapRootWait(root);  // the late grace
  while (bootstrapRootRunningAt(root) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(bootstrapRootRunningAt(root));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST_F(BootstrapTest, NranksMismatchIsRejected) {
  weftUniqueId id;
  createUniqueId(&id, 500);
  std::thread first([&] {
    try {
      Bootstrap::join(id, 0, 2, 500);  // rank 1 never comes with nranks 2
    } catch (const Error&) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  try {
    Bootstrap::join(id, 1, 3, 500);
    ADD_FAILURE() << "nranks mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidArgument) << e.what();
  }
  first.join();
}

TEST_F(BootstrapTest, AbortUnblocksRecv) {
  runRanks(2, 10000, [](int rank, Bootstrap& b) {
    if (rank != 0) return;  // (no final barrier: rank 0 is aborted)
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      b.abort();
    });
    auto t0 = std::chrono::steady_clock::now();
    int v;
    try {
      b.recv(1, 99, &v, sizeof(v));  // never sent
      ADD_FAILURE() << "recv returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), weftRemoteError);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    aborter.join();
  }, nullptr, true);
}

TEST_F(BootstrapTest, RecvTimesOut) {
  runRanks(2, 200, [](int rank, Bootstrap& b) {
    int v;
    try {
      b.recv(1 - rank, 5, &v, sizeof(v));
      ADD_FAILURE() << "recv returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), weftTimeout);
    }
  }, nullptr, true);
}

TEST_F(BootstrapTest, PeerLostWithoutGoodbye) {
  weftUniqueId id;
  createUniqueId(&id, 10000);
  std::unique_ptr<Bootstrap> b0, b1;
  std::thread t([&] { b1 = Bootstrap::join(id, 1, 2, 10000); });
  b0 = Bootstrap::join(id, 0, 2, 10000);
  t.join();
  std::atomic<int> lost{-1};
  b0->setPeerLostHandler([&](int peer) { lost = peer; });
  std::thread t2([&] { b1->barrier(); });  // opens the connections both ways
  b0->barrier();
  t2.join();
  b1->abort();    // an aborted rank leaves without goodbye, like a crash
  b1.reset();
  for (int i = 0; i < 200 && lost.load() < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(lost.load(), 1);
  int v;
  try {
    b0->recv(1, 1, &v, sizeof(v));
    ADD_FAILURE() << "recv from a lost peer returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftRemoteError);
  }
}

TEST_F(BootstrapTest, OrderlyShutdownIsNotALoss) {
  weftUniqueId id;
  createUniqueId(&id, 10000);
  std::unique_ptr<Bootstrap> b0, b1;
  std::thread t([&] { b1 = Bootstrap::join(id, 1, 2, 10000); });
  b0 = Bootstrap::join(id, 0, 2, 10000);
  t.join();
  std::atomic<int> lost{-1};
  b0->setPeerLostHandler([&](int peer) { lost = peer; });
  std::thread t2([&] { b1->barrier(); });
  b0->barrier();
  t2.join();
  b1->shutdown();
  b1.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(lost.load(), -1);
}

TEST_F(BootstrapTest, CommIdAddressRootStartedByRankZero) {
  // Find a free port, then name it in WEFT_COMM_ID.
  SocketAddress lo = SocketAddress::parse("127.0.0.1:1", "test");
  lo.setPort(0);
  SocketAddress freePort;
  { Socket probe = listenOn(lo, &freePort); }
  setenv("WEFT_COMM_ID", freePort.str().c_str(), 1);
  weftUniqueId a, b;
  createUniqueId(&a, 5000);
  createUniqueId(&b, 5000);  // made independently, must agree
  unsetenv("WEFT_COMM_ID");
  EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0);
  EXPECT_EQ(rootOf(a).str(), freePort.str());
  std::unique_ptr<Bootstrap> b0, b1;
  std::thread t([&] { b1 = Bootstrap::join(b, 1, 2, 5000); });  // may come before the root exists
  b0 = Bootstrap::join(a, 0, 2, 5000);
  t.join();
  int x = 3, y = 0;
  b0->send(1, 1, &x, sizeof(x));
  b1->recv(0, 1, &y, sizeof(y));
  EXPECT_EQ(y, 3);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Queries are answered by the peer's reader thread while the peer's own
// thread is busy elsewhere (here: asleep, as a rank blocked in a collective
// would be); a rank without a handler, and one that answers too late, count
// as not answering within the bound, and a late reply is not taken for a
// later query's.
TEST_F(BootstrapTest, QueriesAreAnsweredByReaderThreadsWithinTheBound) {
  runRanks(3, 10000, [](int rank, Bootstrap& b) {
    std::atomic<bool> slow{true};
    if (rank == 1)
      b.setQueryHandler([&slow](int peer, const std::vector<char>& request) {
        if (slow.exchange(false)) std::this_thread::sleep_for(std::chrono::milliseconds(600));
        std::vector<char> reply = request;
        reply.push_back(char('0' + peer));
        return reply;
      });
    b.barrier();
    if (rank == 0) {
      const std::vector<char> ask = {'h', 'i'};
      // Rank 1's first answer comes after the bound: no answer; rank 2 has
      // no handler.
      auto first = b.query({1, 2, 0}, ask, 200);
      EXPECT_FALSE(first.answered[0]);
      EXPECT_NE(first.why[0].find("no answer within 200 ms"), std::string::npos) << first.why[0];
      EXPECT_FALSE(first.answered[1]);
      EXPECT_FALSE(first.answered[2]) << "rank 0 has no handler either";
      std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the late reply arrives meanwhile
      const auto start = std::chrono::steady_clock::now();
      auto second = b.query({1}, {'y', 'o'}, 2000);
      const auto tookMs = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                                 start).count();
      ASSERT_TRUE(second.answered[0]) << second.why[0];
      EXPECT_EQ(std::string(second.replies[0].begin(), second.replies[0].end()), "yo0");
      EXPECT_LT(tookMs, 1000);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // busy, not reading its mailbox
    }
    b.barrier();
    b.setQueryHandler(nullptr);
  });
}

// The root's process runs out of descriptors while ranks join: the root keeps
// trying until its deadline, then tells the ranks it could reach that a
// process limit, not a missing rank, kept the job from starting (the fault
// campaign's ulimit -n sweep found a plain "timed out" here).
TEST_F(BootstrapTest, RootOutOfDescriptorsTellsTheRanksWhy) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    weftUniqueId id;
    createUniqueId(&id, 1500);
    bootstrap_wire::UniqueIdLayout layout;
    memcpy(&layout, &id, sizeof(layout));
    std::string msg;
    int code = weftSuccess;
    // UBSan's vptr check finds a polymorphic object's type in a cache and, on
    // a miss, reads its vtable through a pipe(); with no descriptor left
    // that read fails and the object is reported as not of its type (seen as
    // "invalid vptr" in Error's constructor, flaky with the load). The root
    // and rank 0 make Errors while this process has no descriptor, so one is
    // made first: Error's vtable is then in the cache.
    const Error cached(weftSystemError, "vptr cache");
    if (cached.code() != weftSystemError) _exit(3);
    std::thread rank0([&] {
      try {
        Bootstrap::join(id, 0, 2, 1500);  // the same deadline as the root's: its answer must come first
      } catch (const Error& e) {
        msg = e.what();
        code = e.code();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 0 waits for the root's answer
    int late = socket(layout.root.sa.sa_family, SOCK_STREAM, 0);
    rlimit r{64, 64};
    if (late < 0 || setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(3);
    while (open("/dev/null", O_RDONLY) >= 0) {
    }
    connect(late, &layout.root.sa, layout.root.length());  // the root cannot accept it
    rank0.join();
    fprintf(stderr, "rank 0 (code %d): %s\n", code, msg.c_str());
    _exit(code == weftSystemError && msg.find("ran out of descriptors") != std::string::npos &&
                  msg.find("ulimit -n") != std::string::npos
              ? 0
              : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: set-up failed, 5: rank 0's error does not name the root's limit";
}

}  // namespace
}  // namespace weft
