#include "src/bootstrap/inbox.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

using namespace bootstrap_wire;

// While nothing is in a handshake the thread sleeps in poll until a socket
// is ready or stop() shuts the listener down; this bounds the sleep anyway.
static constexpr int kIdlePollMs = 1000;
// At most this many bytes are read from one connection per pass, so one
// busy peer cannot starve the others.
static constexpr size_t kReadBudgetBytes = 4u << 20;
// A frame's buffer grows in steps of this size as its bytes arrive, so a
// header that claims much and sends little costs little.
static constexpr size_t kPayloadChunk = 1u << 20;

struct Inbox::Pending {
  Socket sock;
  std::string from;
  handshake::Acceptor handshake;
};

struct Inbox::Link {
  Socket sock;
  int peer = -1;
  std::string from;
  handshake::StreamMac mac;
  FrameHeader header{};
  size_t headerGot = 0;
  bool inPayload = false;
  std::vector<char> payload;
  size_t payloadGot = 0;
};

Inbox::Inbox(int rank, int nranks, const Secret& secret, Socket listener, Sink* sink)
    : rank_(rank), nranks_(nranks), secret_(secret), listener_(std::move(listener)), sink_(sink),
      linkedFrom_(nranks, 0) {
  thread_ = std::thread([this] { run(); });
}

Inbox::~Inbox() { stop(); }

void Inbox::stop() {
  if (!stopping_.exchange(true)) listener_.shutdownBoth();  // wakes the poll at once
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Inbox::run() {
  setLogRank(rank_);
  try {
    loop();
  } catch (const std::exception& e) {
    if (!stopping_.load()) WEFT_WARN("bootstrap rank %d: inbox failed: %s", rank_, e.what());
  }
  pending_.clear();
  links_.clear();
  open_.store(0);
}

int Inbox::pollTimeoutMs() const {
  int64_t ms = starved_ ? 50 : kIdlePollMs;
  for (const Pending& p : pending_) ms = std::min<int64_t>(ms, p.handshake.deadline().remainingNs() / 1000000 + 1);
  return static_cast<int>(ms);
}

void Inbox::loop() {
  std::vector<pollfd> pfds;
  while (!stopping_.load()) {
    pfds.clear();
    pfds.push_back(pollfd{starved_ ? -1 : listener_.fd(), POLLIN, 0});
    for (const Pending& p : pending_) pfds.push_back(pollfd{p.sock.fd(), POLLIN, 0});
    for (const Link& l : links_) pfds.push_back(pollfd{l.sock.fd(), POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), pollTimeoutMs()) < 0 && errno != EINTR) raiseErrno("poll");
    if (stopping_.load()) return;
    starved_ = false;
    // Handshakes that complete below join links_ at its end; only the links
    // polled above are read in this pass.
    size_t linksPolled = links_.size();
    size_t k = 1;
    for (auto it = pending_.begin(); it != pending_.end(); ++k) {
      auto cur = it++;
      if (pfds[k].revents || cur->handshake.deadline().passed()) advanceHandshake(cur);
    }
    for (auto it = links_.begin(); linksPolled > 0; ++k, --linksPolled) {
      auto cur = it++;
      if (!pfds[k].revents) continue;
      ReadResult r = readFrames(*cur);
      if (r == ReadResult::More) continue;
      if (r == ReadResult::Closed || r == ReadResult::Broken) sink_->onLost(cur->peer, r == ReadResult::Broken
                                                                                          ? "a bad frame"
                                                                                          : "connection closed");
      linkedFrom_[cur->peer] = 0;
      links_.erase(cur);  // closes it: a retiring sender waits for exactly this
      open_.store(links_.size());
    }
    if (pfds[0].revents) acceptWaitingConnections();
  }
}

void Inbox::acceptWaitingConnections() {
  for (;;) {
    SocketAddress from;
    int limitErr = 0;
    Socket s = acceptWaiting(listener_, &from, &limitErr);
    if (limitErr) {
      starved_ = true;
      if (!warnedStarved_)
        WEFT_WARN("bootstrap rank %d: cannot accept peer connections: %s%s", rank_, strerror(limitErr),
                  resourceHint(limitErr).c_str());
      warnedStarved_ = true;
      return;
    }
    if (!s.valid()) return;
    pending_.push_back(Pending{std::move(s), from.str(),
                               handshake::Acceptor(secret_, handshake::Purpose::kPeer, sizeof(PeerHello),
                                                   Deadline::after(kHelloTimeoutMs))});
  }
}

void Inbox::advanceHandshake(std::list<Pending>::iterator it) {
  handshake::Acceptor::Step step = it->handshake.advance(it->sock.fd());
  if (step == handshake::Acceptor::Step::More && !it->handshake.deadline().passed()) return;
  std::string why = step == handshake::Acceptor::Step::More ? "no complete hello within " +
                                                                  std::to_string(kHelloTimeoutMs) + " ms"
                                                            : it->handshake.why();
  int peer = -1;
  if (step == handshake::Acceptor::Step::Done && admit(*it, &peer, &why)) {
    Link& l = links_.emplace_back();
    l.sock = std::move(it->sock);
    l.peer = peer;
    l.from = it->from;
    l.mac = it->handshake.session().toAcceptor;
    linkedFrom_[peer] = 1;
    open_.store(links_.size());
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: accepted rank %d from %s", rank_, peer, l.from.c_str());
  } else {
    reject(it->from, why);
  }
  pending_.erase(it);
}

// The hello after a good handshake: the right communicator, a rank in range,
// and no live connection from that rank already (a sender keeps one at a
// time and retires it before it opens the next).
bool Inbox::admit(Pending& p, int* peer, std::string* why) {
  PeerHello h;
  memcpy(&h, p.handshake.hello().data(), sizeof(h));
  *why = peerHelloProblem(h, rank_, nranks_);
  if (why->empty() && linkedFrom_[h.fromRank]) *why = "rank " + std::to_string(h.fromRank) + " is already connected";
  if (!why->empty()) return false;
  *peer = h.fromRank;
  return true;
}

void Inbox::reject(const std::string& from, const std::string& why) {
  if (!stopping_.load()) handshake::warnRejected("bootstrap", from, why);
}

// Reads what the socket has, up to a budget, filing each complete frame.
Inbox::ReadResult Inbox::readFrames(Link& l) {
  size_t budget = kReadBudgetBytes;
  while (budget > 0) {
    char* dst;
    size_t want;
    if (!l.inPayload) {
      dst = reinterpret_cast<char*>(&l.header) + l.headerGot;
      want = sizeof(l.header) - l.headerGot;
    } else {
      if (l.payload.size() == l.payloadGot)
        l.payload.resize(std::min<uint64_t>(l.header.bytes, l.payloadGot + kPayloadChunk));
      dst = l.payload.data() + l.payloadGot;
      want = l.payload.size() - l.payloadGot;
    }
    ssize_t n = ::recv(l.sock.fd(), dst, want, MSG_DONTWAIT);
    if (n == 0) return ReadResult::Closed;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadResult::More;
      return ReadResult::Closed;  // reset: the peer is gone
    }
    budget -= std::min<size_t>(budget, static_cast<size_t>(n));
    if (!l.inPayload) {
      l.headerGot += static_cast<size_t>(n);
      if (l.headerGot < sizeof(l.header)) continue;
      if (const std::string bad = frameHeaderProblem(l.header); !bad.empty()) {
        WEFT_WARN("bootstrap rank %d: rank %d sent %s; closing that connection", rank_, l.peer, bad.c_str());
        return ReadResult::Broken;
      }
      l.inPayload = true;
      l.payload.clear();
      l.payloadGot = 0;
    } else {
      l.payloadGot += static_cast<size_t>(n);
    }
    if (l.payloadGot < l.header.bytes) continue;
    ReadResult r = onCompleteFrame(l);
    if (r != ReadResult::More) return r;
  }
  return ReadResult::More;
}

Inbox::ReadResult Inbox::onCompleteFrame(Link& l) {
  l.inPayload = false;
  l.headerGot = 0;
  std::vector<char> payload = std::move(l.payload);
  l.payload = std::vector<char>();
  if (!l.mac.verify(&l.header, kFrameSignedBytes, payload.data(), payload.size(), l.header.mac)) {
    WEFT_WARN("bootstrap rank %d: a frame from rank %d failed its integrity check (altered or injected); "
              "closing that connection", rank_, l.peer);
    return ReadResult::Broken;
  }
  if (l.header.tag == kCloseTag) {
    WEFT_TRACE(kBootstrap, "bootstrap rank %d: rank %d retired its connection", rank_, l.peer);
    return ReadResult::Retired;
  }
  const bool goodbye = l.header.tag == kGoodbyeTag;
  sink_->onFrame(l.peer, l.header.tag, std::move(payload));
  return goodbye ? ReadResult::Retired : ReadResult::More;
}

}  // namespace weft
