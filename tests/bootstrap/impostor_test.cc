// Processes that hold the job's secret but claim a rank that is not theirs:
// a second hello for a rank at the root, a second connection from a rank
// already connected to a peer, and socket hellos naming another rank or
// edge. Each is refused with an error that names the rank and says what
// happened; the job either goes on untouched or (at the root, which cannot
// tell the real rank from the impostor) stops its set-up at once, never
// handing out a table that names the wrong process.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"
#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/socket.h"
#include "transports/socket/socket_wire.h"

namespace weft {
namespace {

using namespace bootstrap_wire;

class Impostor : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_DEBUG", "WARN", 1);  // the refusals are WARN lines
    unsetenv("WEFT_COMM_ID");
  }
};

int64_t nowMs() { return nowNs() / 1000000; }

UniqueIdLayout layoutOf(const weftUniqueId& id) {
  UniqueIdLayout l;
  memcpy(&l, id.internal, sizeof(l));
  return l;
}

Secret secretOf(const UniqueIdLayout& l) {
  Secret s;
  memcpy(s.data(), l.secret, s.size());
  return s;
}

// Authenticates to `addr` with the job's secret and sends `hello`; returns
// the connection (the listener decides what to do with it).
template <typename Hello>
Socket helloWithTheSecret(const SocketAddress& addr, const Secret& secret, handshake::Purpose purpose,
                          const Hello& hello) {
  Socket s = connectTo(addr, Deadline::after(2000), StopFlags{}, false);
  handshake::Session session =
      handshake::connectSide(s.fd(), secret, purpose, Deadline::after(3000), StopFlags{}, "listener");
  handshake::sendSigned(s.fd(), session.toAcceptor, &hello, sizeof(hello), Deadline::after(3000), StopFlags{},
                        "hello");
  return s;
}

// Whether the listener closed `s` within `ms` (after whatever it sent).
bool closedWithin(const Socket& s, int ms) {
  const int64_t end = nowMs() + ms;
  char buf[256];
  while (nowMs() < end) {
    pollfd p{s.fd(), POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = recv(s.fd(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

// The impostor claims rank 1 before the real rank 1 joins. The root refuses
// the second claim and, unable to tell which claimant is real, answers every
// rank with an error naming the conflict, long before its timeout.
TEST_F(Impostor, RankClaimedTwiceAtTheRootStopsTheSetUp) {
  weftUniqueId id;
  createUniqueId(&id, 20000);
  const UniqueIdLayout l = layoutOf(id);
  SocketAddress fakeListen = SocketAddress::parse("127.0.0.1:9", "impostor");
  Socket impostor =
      helloWithTheSecret(l.root, secretOf(l), handshake::Purpose::kRoot,
                         RootHello{kRootHelloMagic, kVersion, 1, 2, fakeListen});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  testing::internal::CaptureStderr();
  const int64_t start = nowMs();
  std::vector<std::string> errors(2);
  std::vector<weftResult_t> codes(2, weftSuccess);
  std::vector<std::thread> ranks;
  // The real rank 1 first: were rank 0 first, the impostor would complete
  // the set-up in rank 1's place (docs/reliability.md, not covered).
  for (int r : {1, 0}) {
    ranks.emplace_back([&, r] {
      try {
        auto b = Bootstrap::join(id, r, 2, 20000);
      } catch (const Error& e) {
        errors[r] = e.what();
        codes[r] = e.code();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : ranks) t.join();
  const int64_t elapsed = nowMs() - start;
  const std::string log = testing::internal::GetCapturedStderr();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(codes[r], weftInvalidArgument) << "rank " << r << ": " << errors[r];
    EXPECT_NE(errors[r].find("two processes claimed the same rank"), std::string::npos) << errors[r];
  }
  EXPECT_LT(elapsed, 10000);  // the conflict, not the 20 s timeout
  EXPECT_NE(log.find("rank 1 was claimed by a process listening at 127.0.0.1:9 and again from"), std::string::npos)
      << log;
  EXPECT_TRUE(closedWithin(impostor, 3000));  // the impostor got no table either
}

// Rank 0 is connected to rank 1; a second connection that proves the peer
// key (a member of the job, so it passes the handshake) and says it is rank
// 0 is closed, and the real one goes on.
TEST_F(Impostor, SecondConnectionClaimingAConnectedRankIsRefused) {
  weftUniqueId id;
  createUniqueId(&id, 10000);
  const UniqueIdLayout l = layoutOf(id);
  std::vector<std::string> errors(2);
  std::string log;
  bool refused = false;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto b = Bootstrap::join(id, r, 2, 10000);
        int v = 0;
        if (r == 0) {
          v = 1;
          b->send(1, 5, &v, sizeof v);  // opens rank 0's connection to rank 1
          b->recv(1, 6, &v, sizeof v);  // rank 1 has it: the connection is up
          testing::internal::CaptureStderr();
          Socket fake = helloWithTheSecret(SocketAddress::parse(b->peerAddress(1), "rank 1"), b->peerKey(),
                                           handshake::Purpose::kPeer, PeerHello{kPeerHelloMagic, kVersion, 0, 2});
          refused = closedWithin(fake, 3000);
          log = testing::internal::GetCapturedStderr();
          v = 42;
          b->send(1, 7, &v, sizeof v);
        } else {
          b->recv(0, 5, &v, sizeof v);
          b->send(0, 6, &v, sizeof v);
          b->recv(0, 7, &v, sizeof v);
          EXPECT_EQ(v, 42);  // from the real rank 0, over its connection
        }
        b->barrier();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_TRUE(refused);
  EXPECT_NE(log.find("rank 0 is already connected"), std::string::npos) << log;
}

// A process that holds the job's secret but was not admitted by the root
// (a second launch, a port scanner) cannot pass a rank's handshake, so it
// cannot claim a rank that has not connected yet; the ranks go on.
TEST_F(Impostor, SecretWithoutAdmissionCannotClaimAnUnconnectedRank) {
  weftUniqueId id;
  createUniqueId(&id, 10000);
  const UniqueIdLayout l = layoutOf(id);
  std::vector<std::string> errors(3);
  std::string impostorError;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto b = Bootstrap::join(id, r, 3, 10000);
        int v = 0;
        if (r == 0) {
          // Were the secret the key, a claim to be rank 2 made before rank
          // 2 connects would be believed.
          Socket s = connectTo(SocketAddress::parse(b->peerAddress(1), "rank 1"), Deadline::after(2000),
                               StopFlags{}, false);
          try {
            handshake::connectSide(s.fd(), secretOf(l), handshake::Purpose::kPeer, Deadline::after(3000),
                                   StopFlags{}, "rank 1");
          } catch (const Error& e) {
            impostorError = e.what();
          }
          b->send(1, 8, &v, sizeof v);
        } else if (r == 1) {
          b->recv(0, 8, &v, sizeof v);
          b->recv(2, 9, &v, sizeof v);
          EXPECT_EQ(v, 7);
        } else {
          v = 7;
          b->send(1, 9, &v, sizeof v);
        }
        b->barrier();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  EXPECT_NE(impostorError.find("failed to prove"), std::string::npos) << impostorError;
}

// A socket data connection is expected from one rank, for one edge (tag)
// and one set-up (a nonce the two ends swapped over the authenticated
// bootstrap): a hello naming another rank, or the right rank without the
// nonce, is another edge's.
TEST(SocketHelloCheck, AnotherRankOrEdgeIsRefused) {
  using socket_wire::SocketHello;
  constexpr uint32_t m = socket_wire::kHelloMagic, ver = socket_wire::kVersion;
  const int peer = 3;
  const uint64_t tag = 77, nonce = 0x1234567890abcdefull;
  EXPECT_EQ(socket_wire::socketHelloProblem(SocketHello{m, ver, peer, 1, tag, nonce}, peer, tag, nonce, 2), "");
  EXPECT_EQ(socket_wire::socketHelloProblem(SocketHello{m, ver, 2, 1, tag, nonce}, peer, tag, nonce, 2),
            "hello for another edge (rank 2, tag 77)");
  EXPECT_NE(socket_wire::socketHelloProblem(SocketHello{m, ver, peer, 1, tag, nonce + 1}, peer, tag, nonce, 2), "");
  EXPECT_NE(socket_wire::socketHelloProblem(SocketHello{m, ver, peer, 1, tag + 1, nonce}, peer, tag, nonce, 2), "");
  EXPECT_EQ(socket_wire::socketHelloProblem(SocketHello{m, ver, peer, 2, tag, nonce}, peer, tag, nonce, 2),
            "bad socket index 2");
}

}  // namespace
}  // namespace weft
