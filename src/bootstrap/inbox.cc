#include "src/bootstrap/inbox.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/util/clock.h"
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
// An outgoing connection found busy (a send on it under way) is looked at
// again after this long, rather than polled hot.
static constexpr int64_t kBusyOutgoingRetryNs = 5'000'000;

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
  uint64_t lastActive = 0;  // Inbox::activity_ at its last bytes
  bool asked = false;       // sent a retire request
};

Inbox::Inbox(int rank, int nranks, const Secret& secret, Socket listener, Sink* sink, size_t maxIncoming)
    : rank_(rank), nranks_(nranks), secret_(secret), listener_(std::move(listener)), sink_(sink),
      maxIncoming_(maxIncoming), wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), deferredUntilNs_(nranks, 0),
      linkedFrom_(nranks, 0) {
  if (!wake_.valid()) raiseErrno("eventfd");
  thread_ = std::thread([this] { run(); });
}

void Inbox::wake() {
  const uint64_t one = 1;
  if (::write(wake_.fd(), &one, sizeof(one)) < 0) {}  // already signalled (EAGAIN) is as good
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
  const int64_t now = nowNs();
  for (int64_t until : deferredUntilNs_)
    if (until > now) ms = std::min<int64_t>(ms, (until - now) / 1000000 + 1);
  for (const Pending& p : pending_) ms = std::min<int64_t>(ms, p.handshake.deadline().remainingNs() / 1000000 + 1);
  return static_cast<int>(ms);
}

void Inbox::loop() {
  std::vector<pollfd> pfds;
  while (!stopping_.load()) {
    pfds.clear();
    // At the bound the listener rests: new connections wait in the backlog.
    pfds.push_back(pollfd{starved_ || full() ? -1 : listener_.fd(), POLLIN, 0});
    pfds.push_back(pollfd{wake_.fd(), POLLIN, 0});
    for (const Pending& p : pending_) pfds.push_back(pollfd{p.sock.fd(), POLLIN, 0});
    for (const Link& l : links_) pfds.push_back(pollfd{l.sock.fd(), POLLIN, 0});
    const size_t outgoingAt = pfds.size();
    watched_.clear();
    sink_->watchOutgoing(&watched_);
    const int64_t now = nowNs();
    for (const auto& [fd, peer] : watched_) pfds.push_back(pollfd{deferredUntilNs_[peer] > now ? -1 : fd, POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), pollTimeoutMs()) < 0 && errno != EINTR) raiseErrno("poll");
    if (stopping_.load()) return;
    starved_ = false;
    if (pfds[1].revents) {
      uint64_t n;
      if (::read(wake_.fd(), &n, sizeof(n)) < 0) {}  // EAGAIN: nothing to clear
    }
    // Handshakes that complete below join links_ at its end; only the links
    // polled above are read in this pass.
    size_t linksPolled = links_.size();
    size_t k = 2;
    for (auto it = pending_.begin(); it != pending_.end(); ++k) {
      auto cur = it++;
      if (pfds[k].revents || cur->handshake.deadline().passed()) advanceHandshake(cur);
    }
    for (auto it = links_.begin(); linksPolled > 0; ++k, --linksPolled) {
      auto cur = it++;
      if (!pfds[k].revents) continue;
      cur->lastActive = ++activity_;
      ReadResult r = readFrames(*cur);
      if (r == ReadResult::More) continue;
      if (r == ReadResult::Closed || r == ReadResult::Broken) sink_->onLost(cur->peer, r == ReadResult::Broken
                                                                                          ? "a bad frame"
                                                                                          : "connection closed");
      linkedFrom_[cur->peer] = 0;
      links_.erase(cur);  // closes it: a retiring sender waits for exactly this
      open_.store(links_.size());
    }
    serveOutgoing(pfds, outgoingAt);
    if (pfds[0].revents) acceptWaitingConnections();
    if (full()) askToRetire();
  }
}

void Inbox::serveOutgoing(const std::vector<pollfd>& pfds, size_t first) {
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (!pfds[first + i].revents || pfds[first + i].fd < 0) continue;
    const auto [fd, peer] = watched_[i];
    if (!sink_->onOutgoingReadable(peer, fd)) deferredUntilNs_[peer] = nowNs() + kBusyOutgoingRetryNs;
  }
}

// Asks the senders of the least recently active idle connections (none
// mid-frame) to retire them, keeping an eighth of the bound (at least one)
// asked and not yet closed.
void Inbox::askToRetire() {
  const size_t want = std::max<size_t>(1, maxIncoming_ / 8);
  size_t asked = 0;
  for (const Link& l : links_) asked += l.asked;
  while (asked < want) {
    Link* oldest = nullptr;
    for (Link& l : links_)
      if (!l.asked && !l.inPayload && l.headerGot == 0 && (!oldest || l.lastActive < oldest->lastActive)) oldest = &l;
    if (!oldest) return;
    oldest->asked = true;
    ++asked;
    if (::send(oldest->sock.fd(), &kRetireRequest, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
      WEFT_TRACE(kBootstrap, "bootstrap rank %d: %zu connections in (the bound): asked rank %d to retire its", rank_,
                 links_.size() + pending_.size(), oldest->peer);
  }
}

void Inbox::acceptWaitingConnections() {
  while (!full()) {
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
    peak_.store(std::max(peak_.load(), links_.size() + pending_.size()));
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
    l.lastActive = ++activity_;
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
