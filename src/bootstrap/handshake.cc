#include "src/bootstrap/handshake.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::handshake {

namespace {

Digest256 derive(const Secret& secret, const char* label, Purpose purpose, const uint8_t* nc, const uint8_t* na) {
  HmacSha256 h(secret.data(), secret.size());
  const uint32_t p = static_cast<uint32_t>(purpose);
  h.update(label, strlen(label) + 1).update(&p, sizeof(p)).update(nc, kNonceBytes).update(na, kNonceBytes);
  return h.finish();
}

Session sessionFor(const Secret& secret, Purpose purpose, const uint8_t* nc, const uint8_t* na) {
  return Session{StreamMac(derive(secret, "to-acceptor", purpose, nc, na)),
                 StreamMac(derive(secret, "to-connector", purpose, nc, na))};
}

const char* failureText(IoStatus st) {
  return st == IoStatus::Eof ? "closed the connection" : ioStatusName(st);
}

}  // namespace

std::string challengeProblem(const Challenge& c, Purpose purpose) {
  if (c.magic != kChallengeMagic || c.version != kVersion)
    return "bad magic (not a weft handshake, or another weft version)";
  if (c.purpose != static_cast<uint32_t>(purpose))
    return "handshake for another kind of connection (purpose " + std::to_string(c.purpose) + ")";
  return std::string();
}

std::string responseProblem(const Response& r) {
  if (r.magic != kResponseMagic || r.version != kVersion) return "garbage (not a weft peer?)";
  return std::string();
}

void StreamMac::compute(const void* a, size_t aBytes, const void* b, size_t bBytes, uint8_t mac[kMacBytes]) {
  HmacSha256 h(key_.data(), key_.size());
  h.update(&seq_, sizeof(seq_)).update(&aBytes, sizeof(aBytes)).update(a, aBytes).update(b, bBytes);
  Digest256 d = h.finish();
  memcpy(mac, d.data(), kMacBytes);
  ++seq_;
}

void StreamMac::sign(const void* a, size_t aBytes, const void* b, size_t bBytes, uint8_t mac[kMacBytes]) {
  compute(a, aBytes, b, bBytes, mac);
}

bool StreamMac::verify(const void* a, size_t aBytes, const void* b, size_t bBytes, const uint8_t mac[kMacBytes]) {
  uint8_t expected[kMacBytes];
  compute(a, aBytes, b, bBytes, expected);
  return constantTimeEqual(expected, mac, kMacBytes);
}

Session connectSide(int fd, const Secret& secret, Purpose purpose, Deadline deadline, StopFlags stop,
                    const std::string& what) {
  Challenge c{kChallengeMagic, kVersion, static_cast<uint32_t>(purpose), 0, {}};
  randomBytes(c.nonce, sizeof(c.nonce));
  sendAll(fd, &c, sizeof(c), deadline, stop, what.c_str());
  Response r;
  int err = 0;
  IoStatus st = tryRecvAll(fd, &r, sizeof(r), deadline, stop, &err);
  if (st == IoStatus::Timeout)
    raise(weftTimeout, "%s did not answer the authentication challenge in time", what.c_str());
  if (st == IoStatus::Stopped) raise(weftRemoteError, "%s: authentication stopped by an abort", what.c_str());
  if (st != IoStatus::Ok)
    raise(weftRemoteError, "%s %s during authentication (not a weft peer of this communicator, or a different "
          "weft version)", what.c_str(), err ? strerror(err) : failureText(st));
  Digest256 expected = derive(secret, "acceptor", purpose, c.nonce, r.nonce);
  if (!responseProblem(r).empty())
    raise(weftRemoteError, "%s answered the authentication challenge with garbage (not a weft peer?)",
          what.c_str());
  if (!constantTimeEqual(expected.data(), r.mac, sizeof(r.mac)))
    raise(weftRemoteError, "%s failed to prove the communicator's secret (a different unique id or "
          "WEFT_COMM_SECRET, or another process listening at that address)", what.c_str());
  Proof p;
  Digest256 mine = derive(secret, "connector", purpose, c.nonce, r.nonce);
  memcpy(p.mac, mine.data(), sizeof(p.mac));
  sendAll(fd, &p, sizeof(p), deadline, stop, what.c_str());
  return sessionFor(secret, purpose, c.nonce, r.nonce);
}

bool acceptSide(int fd, const Secret& secret, Purpose purpose, Deadline deadline, StopFlags stop, Session* out,
                std::string* why) {
  Challenge c;
  IoStatus st = tryRecvAll(fd, &c, sizeof(c), deadline, stop);
  if (st != IoStatus::Ok) {
    *why = st == IoStatus::Eof ? "closed before a complete challenge" : ioStatusName(st);
    return false;
  }
  *why = challengeProblem(c, purpose);
  if (!why->empty()) return false;
  Response r{kResponseMagic, kVersion, {}, {}};
  randomBytes(r.nonce, sizeof(r.nonce));
  Digest256 mac = derive(secret, "acceptor", purpose, c.nonce, r.nonce);
  memcpy(r.mac, mac.data(), sizeof(r.mac));
  st = trySendAll(fd, &r, sizeof(r), deadline, stop);
  Proof p;
  if (st == IoStatus::Ok) st = tryRecvAll(fd, &p, sizeof(p), deadline, stop);
  if (st != IoStatus::Ok) {
    *why = st == IoStatus::Eof ? "closed during authentication (it holds a different secret?)" : ioStatusName(st);
    return false;
  }
  Digest256 expected = derive(secret, "connector", purpose, c.nonce, r.nonce);
  if (!constantTimeEqual(expected.data(), p.mac, sizeof(p.mac))) {
    *why = "wrong secret (its proof does not match: a different communicator?)";
    return false;
  }
  *out = sessionFor(secret, purpose, c.nonce, r.nonce);
  return true;
}

Acceptor::Acceptor(const Secret& secret, Purpose purpose, size_t helloBytes, Deadline deadline)
    : secret_(secret), purpose_(purpose), deadline_(deadline), buf_(sizeof(Challenge)), hello_(helloBytes) {}

Acceptor::Step Acceptor::fail(std::string why) {
  why_ = std::move(why);
  return Step::Failed;
}

Acceptor::Step Acceptor::advance(int fd) {
  for (;;) {
    while (got_ < buf_.size()) {
      ssize_t n = ::recv(fd, buf_.data() + got_, buf_.size() - got_, MSG_DONTWAIT);
      if (n > 0) {
        got_ += static_cast<size_t>(n);
        continue;
      }
      if (n == 0) return fail(phase_ == Phase::Challenge ? "closed before a complete challenge"
                              : phase_ == Phase::Proof  ? "closed during authentication (it holds a different secret?)"
                                                        : "closed before a complete hello");
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return fail(std::string("receive failed: ") + strerror(errno));
      if (deadline_.passed()) return fail("timed out");
      return Step::More;
    }
    got_ = 0;
    Step s = phase_ == Phase::Challenge ? onChallenge(fd) : phase_ == Phase::Proof ? onProof() : onHello();
    if (s != Step::More) return s;
  }
}

Acceptor::Step Acceptor::onChallenge(int fd) {
  memcpy(&challenge_, buf_.data(), sizeof(challenge_));
  const Challenge& c = challenge_;
  if (c.magic != kChallengeMagic || c.version != kVersion)
    return fail("bad magic (not a weft handshake, or another weft version)");
  if (c.purpose != static_cast<uint32_t>(purpose_))
    return fail("handshake for another kind of connection (purpose " + std::to_string(c.purpose) + ")");
  response_ = Response{kResponseMagic, kVersion, {}, {}};
  randomBytes(response_.nonce, sizeof(response_.nonce));
  Digest256 mac = derive(secret_, "acceptor", purpose_, c.nonce, response_.nonce);
  memcpy(response_.mac, mac.data(), sizeof(response_.mac));
  // A fresh socket's send buffer takes these few bytes at once; one that
  // does not is a peer not reading, refused like any other failure.
  ssize_t n;
  do n = ::send(fd, &response_, sizeof(response_), MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(response_))) return fail("could not send the response");
  phase_ = Phase::Proof;
  buf_.assign(sizeof(Proof), 0);
  return Step::More;
}

Acceptor::Step Acceptor::onProof() {
  Digest256 expected = derive(secret_, "connector", purpose_, challenge_.nonce, response_.nonce);
  if (!constantTimeEqual(expected.data(), buf_.data(), sizeof(Proof)))
    return fail("wrong secret (its proof does not match: a different communicator?)");
  session_ = sessionFor(secret_, purpose_, challenge_.nonce, response_.nonce);
  phase_ = Phase::Hello;
  buf_.assign(hello_.size() + kMacBytes, 0);
  return Step::More;
}

Acceptor::Step Acceptor::onHello() {
  memcpy(hello_.data(), buf_.data(), hello_.size());
  if (!session_.toAcceptor.verify(hello_.data(), hello_.size(), nullptr, 0, buf_.data() + hello_.size()))
    return fail("hello failed its integrity check");
  return Step::Done;
}

void sendSigned(int fd, StreamMac& mac, const void* msg, size_t bytes, Deadline deadline, StopFlags stop,
                const char* what) {
  uint8_t tag[kMacBytes];
  mac.sign(msg, bytes, nullptr, 0, tag);
  int err = 0;
  IoStatus st = trySendTwo(fd, msg, bytes, tag, sizeof(tag), deadline, stop, &err);
  if (st == IoStatus::Ok) return;
  raise(st == IoStatus::Timeout ? weftTimeout : weftRemoteError, "sending to %s failed: %s%s%s", what,
        ioStatusName(st), err ? ": " : "", err ? strerror(err) : "");
}

bool recvSigned(int fd, StreamMac& mac, void* msg, size_t bytes, Deadline deadline, StopFlags stop,
                std::string* why) {
  uint8_t tag[kMacBytes];
  IoStatus st = tryRecvAll(fd, msg, bytes, deadline, stop);
  if (st == IoStatus::Ok) st = tryRecvAll(fd, tag, sizeof(tag), deadline, stop);
  if (st != IoStatus::Ok) {
    *why = st == IoStatus::Eof ? "closed before a complete hello" : ioStatusName(st);
    return false;
  }
  if (!mac.verify(msg, bytes, nullptr, 0, tag)) {
    *why = "hello failed its integrity check";
    return false;
  }
  return true;
}

bool warnRejected(const char* who, const SocketAddress& from, const std::string& why) {
  return warnRejected(who, from.str(), why);
}

bool warnRejected(const char* who, const std::string& from, const std::string& why) {
  constexpr int64_t kWindowNs = 10'000'000'000;
  static std::mutex mu;
  static int64_t windowStart = 0;
  static int shown = 0;
  static long suppressed = 0;
  long summary = 0;
  bool show = false, last = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    const int64_t now = nowNs();
    if (now - windowStart > kWindowNs) {
      summary = suppressed;
      windowStart = now;
      shown = 0;
      suppressed = 0;
    }
    show = shown < kRejectionsShown;
    if (show) last = ++shown == kRejectionsShown;
    else ++suppressed;
  }
  if (summary) WEFT_WARN("%ld more connections were refused in the previous 10 s window (not logged one by one)", summary);
  if (show)
    WEFT_WARN("%s: rejected connection from %s: %s%s", who, from.c_str(), why.c_str(),
              last ? " (further refusals in this 10 s window are only counted)" : "");
  return show;
}

}  // namespace weft::handshake
