#include "transports/socket/socket_connection.h"

#include <poll.h>
#include <sys/mman.h>

#include <cstring>
#include <list>

#include "src/bootstrap/handshake.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft {

using namespace socket_wire;


// How long an accepted socket may take to complete its handshake and hello.
static constexpr int64_t kHelloTimeoutMs = 2000;
// How often the accepting proxy re-checks its deadlines and stop flags.
static constexpr int64_t kAcceptPollSliceMs = 20;

StagingFifo::StagingFifo(const FifoGeometry& g) {
  bytes_ = fifoBytes(g.nSlots, g.slotBytes);
  mem_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (mem_ == MAP_FAILED) {
    mem_ = nullptr;
    raiseErrno("mmap (socket staging FIFO)");
  }
  memset(mem_, 0, bytes_);  // MAP_POPULATE is advisory; writing makes sure
  hdr_ = fifoInit(mem_, g.nSlots, g.slotBytes);
}

StagingFifo::~StagingFifo() {
  if (mem_) munmap(mem_, bytes_);
}

SocketConnection::SocketConnection(Params params, std::vector<Socket> sockets, Socket listener)
    : p_(std::move(params)), staging_(p_.geometry), listener_(std::move(listener)), sockets_(std::move(sockets)) {
  FifoEnd end;
  end.attach(staging_.header(), staging_.slots(), p_.geometry);
  if (p_.side == Side::Send) {
    end.producerBell = p_.localBell;  // the executor produces; freeing a slot wakes it
    end.consumerBell = &bell_;        // posting a slot wakes the proxy
  } else {
    end.producerBell = &bell_;        // freeing a slot wakes the proxy
    end.consumerBell = p_.localBell;  // posting a slot wakes the executor
  }
  proxyEnd_ = end;
  // WEFT_SOCKET_INLINE: 0 off, 1 the default size, else the largest piece.
  const int64_t inl = settings::get(settings::kSocketInline);
  if (inl < 0) raise(weftInvalidArgument, "WEFT_SOCKET_INLINE=%ld must be 0, 1 or a size in bytes", long(inl));
  // Where ranks outnumber cores too: the executor then polls only after
  // each yield (host_executor.cc), which is how a rank with no proxy
  // thread to wake hears from its peer soonest.
  inlineMaxBytes_ = inl == 1 ? kDefaultInlineMaxBytes : static_cast<uint64_t>(inl);
  if (inlineMaxBytes_ != 0) end.progress = this;
  executorEnd_ = end;
  inlineFds_.reserve(p_.nSockets);
  if (p_.side == Side::Send) {
    sendCursors_.resize(p_.nSockets);
    ready_.store(true);  // the sockets came connected
  } else {
    sockets_.resize(p_.nSockets);
    recvCursors_.resize(p_.nSockets);
    recvSlots_.resize(p_.geometry.nSlots);
  }
  proxy_ = std::thread([this] { run(); });
}

bool SocketConnection::executorActive() const {
  return nowNs() - inlineAtNs_.load(std::memory_order_relaxed) < yieldWindowNs();
}

bool SocketConnection::tryProgress(uint64_t pieceBytes) {
  if (pieceBytes > inlineMaxBytes_) {
    // Not this one: a proxy that stood back for the executor takes over now.
    if (inlineAtNs_.load(std::memory_order_relaxed) != 0) idle();
    return false;
  }
  if (!ready_.load(std::memory_order_acquire) || halted()) return false;
  std::unique_lock<std::mutex> lock(pumpMu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // the proxy is moving bytes right now
  inlineAtNs_.store(nowNs(), std::memory_order_relaxed);
  bool failed = false, moved = false;
  if (p_.side == Side::Send) {
    sendPass(&moved, &failed, &inlineFds_);
  } else {
    uint32_t open = 0;
    bool slotWait = false;
    // A slot of one part travels whole on socket 0: reading the others for
    // it is a failed system call per socket per poll.
    uint64_t off = 0, len = 0;
    slotPart(pieceBytes, p_.nSockets, 1, &off, &len);
    moved = recvPass(&failed, &inlineFds_, &open, &slotWait, len == 0 ? 1 : p_.nSockets, /*onePart=*/true);
  }
  return moved;
}

void SocketConnection::posted() {
  // Send side: push the slot out now; the proxy is woken only for what the
  // kernel did not take (or when it holds the sockets itself).
  const FifoHeader* hdr = proxyEnd_.hdr;
  const uint32_t last = hdr->posted.load(std::memory_order_relaxed) - 1;
  if (p_.side == Side::Send && hdr->sizes[last % hdr->nSlots] <= inlineMaxBytes_ &&
      ready_.load(std::memory_order_acquire) && !halted()) {
    std::unique_lock<std::mutex> lock(pumpMu_, std::try_to_lock);
    if (lock.owns_lock()) {
      inlineAtNs_.store(nowNs(), std::memory_order_relaxed);
      bool moved = false, failed = false;
      if (sendPass(&moved, &failed, &inlineFds_) || failed) return;
    }
  }
  ring(&bell_);
}

void SocketConnection::released() {
  // A proxy waiting for a free slot must hear of it; while the executor
  // moves the bytes itself, it reads into that slot on its next wait.
  if (!executorActive()) ring(&bell_);
}

void SocketConnection::idle() {
  inlineAtNs_.store(0, std::memory_order_relaxed);
  ring(&bell_);
}

SocketConnection::~SocketConnection() {
  destroying_.store(true);
  halt_.store(true);
  ring(&bell_);
  proxy_.join();
}

void SocketConnection::run() {
  setLogRank(p_.rank);
  try {
    if (p_.side == Side::Send) sendLoop();
    else recvLoop();
  } catch (const std::exception& e) {
    failWith(std::string("proxy thread failed: ") + e.what());
  }
}

bool SocketConnection::halted() const {
  return halt_.load(std::memory_order_relaxed) || (p_.abortFlag && p_.abortFlag->load(std::memory_order_relaxed)) ||
         proxyEnd_.failed();
}

void SocketConnection::pollSockets(short events, const std::vector<int>& fds, int timeoutMs) {
  pollfd pfds[kMaxSockets];
  nfds_t n = 0;
  for (int fd : fds) pfds[n++] = pollfd{fd, events, 0};
  if (::poll(pfds, n, timeoutMs) < 0 && errno != EINTR) raiseErrno("poll");
}

void SocketConnection::failWith(const std::string& why) {
  if (failed_.exchange(true)) return;
  halt_.store(true);
  ring(&bell_);
  // Wake a peer blocked on these sockets; the descriptors stay open until
  // destruction, so no other thread can be handed a recycled number.
  for (auto& s : sockets_) s.shutdownBoth();
  // The error is recorded before the FIFO fails, so an executor woken by the
  // failure finds the reason already there.
  bool report = !destroying_.load() && !(p_.abortFlag && p_.abortFlag->load());
  if (report) {
    std::string msg = "NET/Socket " + std::string(p_.side == Side::Send ? "send to " : "receive from ") +
                      p_.peerName + " (tag " + std::to_string(p_.tag) + "): " + why;
    WEFT_WARN("%s", msg.c_str());
    if (p_.onAsyncError) {
      try {
        p_.onAsyncError(weftRemoteError, msg);
      } catch (const std::exception& e) {
        WEFT_WARN("socket transport: async error handler threw: %s", e.what());
      }
    }
  }
  proxyEnd_.fail();
}

// Called when the proxy leaves because of a stop: an abort fails the FIFO so
// the executor stops waiting; a destruction just ends.
void SocketConnection::leaveOnStop() {
  if (p_.abortFlag && p_.abortFlag->load()) proxyEnd_.fail();
}

// Accepts while earlier connections are still in their handshake: every
// accepted socket runs its own handshake state machine with its own bound,
// all from this one thread, so silent or slow connects (a scanner, a flood)
// neither hold a thread each nor delay the real sockets behind them.
bool SocketConnection::acceptAll() {
  const Deadline deadline = Deadline::after(p_.acceptTimeoutMs);
  StopFlags stop{&halt_, p_.abortFlag};
  std::list<PendingAccept> pending;
  std::vector<pollfd> pfds;
  uint32_t arrived = 0;
  bool starved = false;
  while (arrived < p_.nSockets) {
    if (stop.raised()) {
      if (p_.abortFlag && p_.abortFlag->load()) proxyEnd_.fail();
      return false;
    }
    if (deadline.passed()) {
      failWith("only " + std::to_string(arrived) + " of " + std::to_string(p_.nSockets) +
               " sockets connected within " + std::to_string(p_.acceptTimeoutMs) + " ms" +
               (pending.empty() ? "" : " (" + std::to_string(pending.size()) + " connections still in their handshake)"));
      return false;
    }
    pfds.clear();
    pfds.push_back(pollfd{starved ? -1 : listener_.fd(), POLLIN, 0});
    for (auto& a : pending) pfds.push_back(pollfd{a.sock.fd(), POLLIN, 0});
    int64_t sliceMs = std::min<int64_t>(kAcceptPollSliceMs, deadline.remainingNs() / 1000000 + 1);
    if (::poll(pfds.data(), pfds.size(), static_cast<int>(sliceMs)) < 0 && errno != EINTR) raiseErrno("poll");
    starved = false;
    size_t k = 1;
    for (auto it = pending.begin(); it != pending.end(); ++k) {
      const bool ready = pfds[k].revents != 0;
      if (!ready && !it->handshake.deadline().passed()) {
        ++it;
        continue;
      }
      const AcceptOutcome o = finishAccept(*it);
      if (o == AcceptOutcome::Joined) ++arrived;
      if (o == AcceptOutcome::Pending) ++it;
      else it = pending.erase(it);
    }
    if (pfds[0].revents != 0) starved = !acceptPending(&pending, deadline);
  }
  listener_.close();
  WEFT_INFO(kNet, "NET/Socket: %u sockets from %s connected (tag %lu)", p_.nSockets, p_.peerName.c_str(),
            static_cast<unsigned long>(p_.tag));
  return true;
}

// Takes every connection waiting on the listener into `pending`. False when
// descriptors ran out: the listener then rests one slice (handshakes that
// end give theirs back) instead of spinning.
bool SocketConnection::acceptPending(std::list<PendingAccept>* pending, Deadline deadline) {
  for (;;) {
    SocketAddress from;
    int limitErr = 0;
    Socket s = acceptWaiting(listener_, &from, &limitErr);
    if (limitErr) {
      WEFT_WARN("socket transport: cannot accept from %s: %s%s", p_.peerName.c_str(), strerror(limitErr),
                resourceHint(limitErr).c_str());
      return false;
    }
    if (!s.valid()) return true;
    Deadline hello{std::min(deadline.atNs, Deadline::after(kHelloTimeoutMs).atNs)};
    pending->push_back(PendingAccept{std::move(s), from,
                                     handshake::Acceptor(p_.secret, handshake::Purpose::kSocketData,
                                                         sizeof(SocketHello), hello)});
  }
}

// Advances one handshake; Joined when it delivered one of this edge's
// sockets (moved into sockets_), Rejected when it was turned away (logged),
// Pending otherwise.
SocketConnection::AcceptOutcome SocketConnection::finishAccept(PendingAccept& a) {
  handshake::Acceptor::Step step = a.handshake.advance(a.sock.fd());
  if (step == handshake::Acceptor::Step::More) {
    if (!a.handshake.deadline().passed()) return AcceptOutcome::Pending;
    return reject(a, "no complete hello within " + std::to_string(kHelloTimeoutMs) + " ms");
  }
  if (step == handshake::Acceptor::Step::Failed) return reject(a, a.handshake.why());
  SocketHello h;
  memcpy(&h, a.handshake.hello().data(), sizeof(h));
  const std::string bad = socketHelloProblem(h, p_.peer, p_.tag, p_.nonce, p_.nSockets);
  if (!bad.empty()) return reject(a, bad);
  if (sockets_[h.index].valid()) return reject(a, "repeated socket index " + std::to_string(h.index));
  sockets_[h.index] = std::move(a.sock);
  return AcceptOutcome::Joined;
}

SocketConnection::AcceptOutcome SocketConnection::reject(PendingAccept& a, const std::string& why) {
  handshake::warnRejected("socket transport", a.from, why);
  return AcceptOutcome::Rejected;
}

}  // namespace weft
