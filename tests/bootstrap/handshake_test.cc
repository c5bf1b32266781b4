// The mutual handshake over a socket pair, and the per-message MACs after it.
#include "src/bootstrap/handshake.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <string>

#include "src/util/error.h"

namespace weft {
namespace {

using handshake::Purpose;

struct Pair {
  Socket connector, acceptor;
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    connector = Socket(fds[0]);
    acceptor = Socket(fds[1]);
  }
};

Secret secretOf(uint8_t fill) {
  Secret s;
  s.fill(fill);
  return s;
}

struct Outcome {
  bool accepted = false;
  std::string acceptorWhy;
  std::string connectorError;
  handshake::Session connectorSession, acceptorSession;
};

Outcome run(const Secret& connectorSecret, const Secret& acceptorSecret, Purpose connectorPurpose,
            Purpose acceptorPurpose) {
  Pair p;
  Outcome o;
  auto acceptor = std::async(std::launch::async, [&] {
    o.accepted = handshake::acceptSide(p.acceptor.fd(), acceptorSecret, acceptorPurpose, Deadline::after(2000),
                                       StopFlags{}, &o.acceptorSession, &o.acceptorWhy);
    p.acceptor.shutdownBoth();  // a rejected connection is closed at once
  });
  try {
    o.connectorSession = handshake::connectSide(p.connector.fd(), connectorSecret, connectorPurpose,
                                                Deadline::after(2000), StopFlags{}, "peer");
  } catch (const Error& e) {
    o.connectorError = e.what();
    p.connector.shutdownBoth();  // as the real connectors do when the error unwinds
  }
  acceptor.get();
  return o;
}

TEST(Handshake, SameSecretAuthenticatesBothWays) {
  Outcome o = run(secretOf(1), secretOf(1), Purpose::kPeer, Purpose::kPeer);
  ASSERT_TRUE(o.accepted) << o.acceptorWhy;
  ASSERT_EQ(o.connectorError, "");
  // Both ends derived the same keys: what one signs the other accepts.
  const char msg[] = "frame payload";
  uint8_t mac[handshake::kMacBytes];
  o.connectorSession.toAcceptor.sign(msg, sizeof(msg), nullptr, 0, mac);
  EXPECT_TRUE(o.acceptorSession.toAcceptor.verify(msg, sizeof(msg), nullptr, 0, mac));
  o.acceptorSession.toConnector.sign(msg, sizeof(msg), nullptr, 0, mac);
  EXPECT_TRUE(o.connectorSession.toConnector.verify(msg, sizeof(msg), nullptr, 0, mac));
}

TEST(Handshake, DifferentSecretsAreCaughtOnBothSides) {
  Outcome o = run(secretOf(1), secretOf(2), Purpose::kPeer, Purpose::kPeer);
  EXPECT_FALSE(o.accepted);
  EXPECT_NE(o.connectorError.find("failed to prove"), std::string::npos) << o.connectorError;
  EXPECT_NE(o.acceptorWhy.find("closed during authentication"), std::string::npos) << o.acceptorWhy;
}

TEST(Handshake, PurposeMismatchIsRejected) {
  Outcome o = run(secretOf(1), secretOf(1), Purpose::kRoot, Purpose::kPeer);
  EXPECT_FALSE(o.accepted);
  EXPECT_NE(o.acceptorWhy.find("another kind of connection"), std::string::npos) << o.acceptorWhy;
  EXPECT_NE(o.connectorError, "");
}

// What a connector sent in one exchange, replayed byte for byte to a new
// acceptor, does not pass: the acceptor's fresh nonce changes the proof.
TEST(Handshake, RecordedExchangeCannotBeReplayed) {
  const Secret secret = secretOf(9);
  Pair first;
  auto acceptor = std::async(std::launch::async, [&] {
    handshake::Session s;
    std::string why;
    return handshake::acceptSide(first.acceptor.fd(), secret, Purpose::kPeer, Deadline::after(2000), StopFlags{},
                                 &s, &why);
  });
  // Record the connector's bytes by running its side by hand.
  handshake::Challenge c{handshake::kChallengeMagic, handshake::kVersion, static_cast<uint32_t>(Purpose::kPeer), 0,
                         {}};
  memset(c.nonce, 3, sizeof(c.nonce));
  sendAll(first.connector.fd(), &c, sizeof(c), Deadline::after(2000), StopFlags{}, "acceptor");
  handshake::Response r;
  recvAll(first.connector.fd(), &r, sizeof(r), Deadline::after(2000), StopFlags{}, "acceptor");
  HmacSha256 h(secret.data(), secret.size());
  const uint32_t purpose = static_cast<uint32_t>(Purpose::kPeer);
  h.update("connector", 10).update(&purpose, sizeof(purpose)).update(c.nonce, 16).update(r.nonce, 16);
  handshake::Proof proof;
  Digest256 d = h.finish();
  memcpy(proof.mac, d.data(), sizeof(proof.mac));
  sendAll(first.connector.fd(), &proof, sizeof(proof), Deadline::after(2000), StopFlags{}, "acceptor");
  ASSERT_TRUE(acceptor.get()) << "the hand-run exchange should pass (the test's derivation is wrong otherwise)";

  Pair second;
  auto replayed = std::async(std::launch::async, [&] {
    handshake::Session s;
    std::string why;
    bool ok = handshake::acceptSide(second.acceptor.fd(), secret, Purpose::kPeer, Deadline::after(2000),
                                    StopFlags{}, &s, &why);
    return ok ? std::string() : why;
  });
  sendAll(second.connector.fd(), &c, sizeof(c), Deadline::after(2000), StopFlags{}, "acceptor");
  sendAll(second.connector.fd(), &proof, sizeof(proof), Deadline::after(2000), StopFlags{}, "acceptor");
  EXPECT_NE(replayed.get().find("wrong secret"), std::string::npos);
}

TEST(Handshake, SilentAcceptorTimesOut) {
  Pair p;
  try {
    handshake::connectSide(p.connector.fd(), secretOf(1), Purpose::kPeer, Deadline::after(100), StopFlags{}, "peer");
    ADD_FAILURE() << "no answer, yet the handshake passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftTimeout) << e.what();
  }
}

// The non-blocking acceptor: fed as bytes arrive, it completes the same
// handshake and checks the hello's MAC; a wrong secret, a tampered hello and
// silence past its deadline each fail with a reason.
handshake::Acceptor::Step feedUntilDone(handshake::Acceptor& a, int fd) {
  for (;;) {
    handshake::Acceptor::Step s = a.advance(fd);
    if (s != handshake::Acceptor::Step::More) return s;
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, 10);
  }
}

TEST(HandshakeAcceptor, CompletesAndChecksTheHello) {
  // honest; a connector with another secret (it hangs up on the response); a tampered hello
  for (int variant = 0; variant < 3; ++variant) {
    Pair p;
    handshake::Acceptor a(secretOf(1), Purpose::kPeer, sizeof(uint64_t), Deadline::after(2000));
    auto conn = std::async(std::launch::async, [&] {
      try {
        handshake::Session s = handshake::connectSide(p.connector.fd(), secretOf(variant == 1 ? 2 : 1),
                                                      Purpose::kPeer, Deadline::after(2000), StopFlags{}, "acceptor");
        uint64_t hello = 42;
        if (variant == 2) {  // garbage in the hello, and the sequence moved on: a MAC is 16 bytes, the hello 8
          uint8_t junk[handshake::kMacBytes];
          s.toAcceptor.sign(&hello, sizeof(hello), nullptr, 0, junk);
          memcpy(&hello, junk, sizeof(hello));
        }
        handshake::sendSigned(p.connector.fd(), s.toAcceptor, &hello, sizeof(hello), Deadline::after(2000),
                              StopFlags{}, "acceptor");
        return s;
      } catch (const Error&) {
        p.connector.shutdownBoth();
        return handshake::Session{};
      }
    });
    handshake::Acceptor::Step step = feedUntilDone(a, p.acceptor.fd());
    conn.get();
    if (variant == 0) {
      ASSERT_EQ(step, handshake::Acceptor::Step::Done) << a.why();
      uint64_t hello;
      memcpy(&hello, a.hello().data(), sizeof(hello));
      EXPECT_EQ(hello, 42u);
    } else {
      EXPECT_EQ(step, handshake::Acceptor::Step::Failed);
      EXPECT_NE(a.why().find(variant == 1 ? "secret" : "integrity"), std::string::npos) << a.why();
    }
  }
}

TEST(HandshakeAcceptor, SilenceFailsAtItsDeadline) {
  Pair p;
  handshake::Acceptor a(secretOf(1), Purpose::kPeer, 8, Deadline::after(100));
  const int64_t t0 = nowNs();
  EXPECT_EQ(feedUntilDone(a, p.acceptor.fd()), handshake::Acceptor::Step::Failed);
  EXPECT_EQ(a.why(), "timed out");
  EXPECT_LT((nowNs() - t0) / 1000000, 1000);
}

TEST(StreamMac, AlteredReplayedAndReorderedMessagesFail) {
  Digest256 key{};
  key[0] = 1;
  handshake::StreamMac sender(key), receiver(key);
  const char a[] = "first", b[] = "second";
  uint8_t macA[handshake::kMacBytes], macB[handshake::kMacBytes];
  sender.sign(a, sizeof(a), nullptr, 0, macA);
  sender.sign(b, sizeof(b), nullptr, 0, macB);
  // Reordered: the second message arrives first.
  handshake::StreamMac r1(key);
  EXPECT_FALSE(r1.verify(b, sizeof(b), nullptr, 0, macB));
  // Altered: one byte changed.
  handshake::StreamMac r2(key);
  char altered[sizeof(a)];
  memcpy(altered, a, sizeof(a));
  altered[0] ^= 1;
  EXPECT_FALSE(r2.verify(altered, sizeof(altered), nullptr, 0, macA));
  // In order: both pass; the first one replayed after them does not.
  EXPECT_TRUE(receiver.verify(a, sizeof(a), nullptr, 0, macA));
  EXPECT_TRUE(receiver.verify(b, sizeof(b), nullptr, 0, macB));
  EXPECT_FALSE(receiver.verify(a, sizeof(a), nullptr, 0, macA));
  // The split between header and payload is part of what is signed.
  handshake::StreamMac s3(key), r3(key);
  uint8_t mac[handshake::kMacBytes];
  s3.sign("ab", 2, "c", 1, mac);
  EXPECT_FALSE(r3.verify("a", 1, "bc", 2, mac));
}

// A flood of refused connections logs the first kRejectionsShown in full and
// counts the rest (the fault campaign's 5000-connection floods wrote one line
// each). In a child, whose window starts fresh.
TEST(Handshake, RefusalsAreLoggedUpToTheWindowsLimit) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const SocketAddress from = SocketAddress::parse("127.0.0.1:5", "from");
    int logged = 0;
    for (int i = 0; i < handshake::kRejectionsShown + 25; i++) logged += handshake::warnRejected("test", from, "garbage");
    _exit(logged);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), handshake::kRejectionsShown);
}

}  // namespace
}  // namespace weft
