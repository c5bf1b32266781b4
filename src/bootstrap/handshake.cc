#include "src/bootstrap/handshake.h"

#include <cstring>

#include "src/util/error.h"

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

}  // namespace weft::handshake
