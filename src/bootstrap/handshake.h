// Mutual authentication of a fresh TCP connection from a shared secret, and
// per-message MACs after it.
//
// Both ends prove they hold the communicator's secret without sending it:
//   connector -> acceptor  Challenge: purpose, fresh nonce Nc
//   acceptor  -> connector Response:  fresh nonce Na, HMAC(secret, "acceptor"|purpose|Nc|Na)
//   connector -> acceptor  Proof:     HMAC(secret, "connector"|purpose|Nc|Na)
// The acceptor proves first, so a connector never answers anyone who lacks
// the secret (a squatter on the root's port learns nothing), and fresh nonces
// on both sides make a recorded exchange worthless. Each direction then gets
// its own key, HMAC(secret, "to-acceptor"/"to-connector"|purpose|Nc|Na), with
// which every later message carries a MAC over its sequence number, so an
// altered, replayed or reordered message is caught.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/bootstrap/bootstrap.h"
#include "src/util/sha256.h"
#include "src/util/socket.h"

namespace weft::handshake {

// What the connection is for; mixed into every MAC so that an exchange for
// one purpose cannot be replayed for another.
enum class Purpose : uint32_t { kRoot = 1, kPeer = 2, kSocketData = 3 };

constexpr size_t kMacBytes = 16;

// The three messages, as they travel (raw bytes: both ends run one weft version).
constexpr uint32_t kChallengeMagic = 0x57464143;  // "WFAC"
constexpr uint32_t kResponseMagic = 0x57464152;   // "WFAR"
constexpr uint32_t kVersion = 1;
constexpr size_t kNonceBytes = 16;

struct Challenge {
  uint32_t magic;
  uint32_t version;
  uint32_t purpose;
  uint32_t pad;
  uint8_t nonce[kNonceBytes];
};

struct Response {
  uint32_t magic;
  uint32_t version;
  uint8_t nonce[kNonceBytes];
  uint8_t mac[32];
};

struct Proof {
  uint8_t mac[32];
};

// What is wrong with a challenge or response as it arrived (before any MAC
// is checked); empty when its fixed fields are right. Apart from the I/O so
// they can be fuzzed on their own.
std::string challengeProblem(const Challenge& c, Purpose purpose);
std::string responseProblem(const Response& r);

// One direction of an authenticated stream.
class StreamMac {
 public:
  StreamMac() = default;
  explicit StreamMac(const Digest256& key) : key_(key) {}
  // MAC over (next sequence number, a, b); advances the sequence.
  void sign(const void* a, size_t aBytes, const void* b, size_t bBytes, uint8_t mac[kMacBytes]);
  // Checks a MAC made by sign() on the other end; advances the sequence.
  bool verify(const void* a, size_t aBytes, const void* b, size_t bBytes, const uint8_t mac[kMacBytes]);

 private:
  void compute(const void* a, size_t aBytes, const void* b, size_t bBytes, uint8_t mac[kMacBytes]);

  Digest256 key_{};
  uint64_t seq_ = 0;
};

struct Session {
  StreamMac toAcceptor;
  StreamMac toConnector;
};

// Runs the connector's half. Throws weft::Error naming `what` when the
// acceptor does not answer in time or fails to prove the secret.
Session connectSide(int fd, const Secret& secret, Purpose purpose, Deadline deadline, StopFlags stop,
                    const std::string& what);

// Runs the acceptor's half. Never throws for the peer's misbehaviour: returns
// false with the reason in *why (the caller closes the connection at once).
bool acceptSide(int fd, const Secret& secret, Purpose purpose, Deadline deadline, StopFlags stop, Session* out,
                std::string* why);

// The acceptor's half and the hello after it, as a state machine over a
// non-blocking socket: one thread can run many handshakes at once, each
// with its own deadline, so a silent or slow connector holds no thread and
// delays no honest one. Feed it whenever the socket is readable.
class Acceptor {
 public:
  enum class Step { More, Done, Failed };
  Acceptor(const Secret& secret, Purpose purpose, size_t helloBytes, Deadline deadline);
  // Reads what the socket has (never waits) and answers the challenge.
  // Done: session() and hello() are ready. Failed: why() says why (the
  // caller closes the connection). Past the deadline: Failed.
  Step advance(int fd);
  Deadline deadline() const { return deadline_; }
  const Session& session() const { return session_; }
  const std::vector<uint8_t>& hello() const { return hello_; }
  const std::string& why() const { return why_; }

 private:
  enum class Phase { Challenge, Proof, Hello };
  Step fail(std::string why);
  Step onChallenge(int fd);
  Step onProof();
  Step onHello();

  const Secret secret_;
  const Purpose purpose_;
  const Deadline deadline_;
  Phase phase_ = Phase::Challenge;
  std::vector<uint8_t> buf_;  // the message being read
  size_t got_ = 0;
  Challenge challenge_{};
  Response response_{};
  Session session_;
  std::vector<uint8_t> hello_;
  std::string why_;
};

// A message with its MAC after it: the hellos that follow a handshake.
void sendSigned(int fd, StreamMac& mac, const void* msg, size_t bytes, Deadline deadline, StopFlags stop,
                const char* what);
// Reads a message sent with sendSigned; false with *why when it cannot be
// read or its MAC is wrong.
bool recvSigned(int fd, StreamMac& mac, void* msg, size_t bytes, Deadline deadline, StopFlags stop,
                std::string* why);

// Logs a refused connection: the first kRejectionsShown in each 10 s window
// in full, then one line per window saying how many more were refused, so a
// flood of stray or hostile connections cannot flood the log too. True when
// this one was logged.
constexpr int kRejectionsShown = 20;
bool warnRejected(const char* who, const SocketAddress& from, const std::string& why);
bool warnRejected(const char* who, const std::string& from, const std::string& why);

}  // namespace weft::handshake
