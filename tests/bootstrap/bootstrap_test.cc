// Threads as ranks: every rank joins over 127.0.0.1 inside this process.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "src/bootstrap/bootstrap.h"
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
              const weftUniqueId* givenId = nullptr) {
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
        b->barrier();  // nobody leaves while others still send to it
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

TEST_F(BootstrapTest, StrayClientsAndWrongSecretAreRejected) {
  weftUniqueId id;
  createUniqueId(&id, 10000);
  SocketAddress root = rootOf(id);
  // Garbage, a too-short hello, a silent client and a wrong secret at the root.
  std::string garbage(200, 'G');
  strayClient(root, garbage.data(), garbage.size());
  strayClient(root, "WF", 2);
  Socket silent = connectTo(root, Deadline::after(2000), StopFlags{}, false);
  bootstrap_wire::RootHello h{bootstrap_wire::kRootHelloMagic, bootstrap_wire::kVersion, {}, 0, 2, root};
  memset(h.secret, 0xAB, sizeof(h.secret));
  strayClient(root, &h, sizeof(h));

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
          bootstrap_wire::PeerHello ph{bootstrap_wire::kPeerHelloMagic, bootstrap_wire::kVersion, {}, 0, 2};
          strayClient(peerListen, &ph, sizeof(ph));  // all-zero secret
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

}  // namespace
}  // namespace weft
