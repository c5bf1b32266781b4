#include "transports/socket/socket_connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
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
    : p_(std::move(params)),
      staging_(p_.geometry),
      // A connection made outside a transport (a test harness) gets a
      // service of its own.
      service_(p_.service ? std::move(p_.service)
                          : std::make_shared<ProxyService>("weft-sock-" + std::to_string(p_.rank), kProxySleepSliceNs,
                                                           /*spin=*/false, p_.rank,
                                                           /*yield=*/!(p_.side == Side::Recv && p_.oversubscribed))),
      bell_(service_->bell()),
      listener_(std::move(listener)),
      sockets_(std::move(sockets)) {
  FifoEnd end;
  end.attach(staging_.header(), staging_.slots(), p_.geometry);
  if (p_.side == Side::Send) {
    end.producerBell = p_.localBell;  // the executor produces; freeing a slot wakes it
    end.consumerBell = bell_;        // posting a slot wakes the proxy
  } else {
    end.producerBell = bell_;        // freeing a slot wakes the proxy
    end.consumerBell = p_.localBell;  // posting a slot wakes the executor
  }
  proxyEnd_ = end;
  // WEFT_SOCKET_INLINE: 0 off, 1 the default size, else the largest piece.
  const int64_t inl = settings::get(settings::kSocketInline);
  if (inl < 0) raise(weftInvalidArgument, "WEFT_SOCKET_INLINE=%ld must be 0, 1 or a size in bytes", long(inl));
  // Where ranks outnumber cores too: the executor then polls only after
  // each yield (host_executor.cc), which is how a rank with no proxy
  // thread to wake hears from its peer soonest.
  if (inl == 1) inlineMaxBytes_ = p_.ranksFillCores ? kInlineEveryPiece : kDefaultInlineMaxBytes;
  else inlineMaxBytes_ = static_cast<uint64_t>(inl);
  if (inlineMaxBytes_ != 0) end.progress = this;
  // WEFT_SOCKET_DIRECT: 0 off, else the smallest piece moved straight from
  // or into the caller's memory.
  const int64_t direct = settings::get(settings::kSocketDirect);
  if (direct < 0) raise(weftInvalidArgument, "WEFT_SOCKET_DIRECT=%ld must be 0 or a size in bytes", long(direct));
  minBytes = static_cast<uint64_t>(direct);
  if (minBytes != 0) end.userMemory = this;
  executorEnd_ = end;
  inlineFds_.reserve(p_.nSockets);
  if (p_.side == Side::Send) {
    sendCursors_.resize(p_.nSockets);
    ready_.store(true);  // the sockets came connected
  } else {
    recvCursors_.resize(p_.nSockets);
    recvSlots_.resize(p_.geometry.nSlots);
    // Given one socket: socket 0 of this rank's sending end to the same
    // peer, read in its other direction (connected and authenticated
    // already); the listener accepts the others.
    if (sockets_.size() > 1)
      raise(weftInternalError, "socket transport: %zu sockets given to a receiving end", sockets_.size());
    arrived_ = static_cast<uint32_t>(sockets_.size());
    sockets_.resize(p_.nSockets);
    if (arrived_ == p_.nSockets) ready_.store(true);
    else acceptDeadline_ = Deadline::after(p_.acceptTimeoutMs);
  }
  service_->add(this);
}

Socket SocketConnection::duplicateFirstSocket(Deadline deadline, std::string* why) {
  // A receiving end accepts in the background: wait (bounded) until every
  // socket has arrived. Nothing writes sockets_ once ready_ is set.
  while (!ready_.load(std::memory_order_acquire)) {
    if (failed_.load() || halted()) {
      *why = "its receiving end failed before all of its sockets arrived";
      return Socket();
    }
    if (deadline.passed()) {
      *why = "its receiving end did not get all of its sockets in time";
      return Socket();
    }
    pollfd none{-1, 0, 0};
    ::poll(&none, 0, 1);
  }
  Socket d(::fcntl(sockets_[0].fd(), F_DUPFD_CLOEXEC, 0));
  if (!d.valid()) *why = std::string("dup: ") + strerror(errno);
  return d;
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
  if (!lock.owns_lock() || halted()) return false;  // the proxy is moving bytes right now, or stopped
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
    // After a read that found nothing, ask poll() first: it looks at the
    // socket without locking it, while a recvmsg on an empty socket holds
    // the socket lock, so a segment arriving then waits in the backlog and
    // costs an extra ACK and the backlog pass.
    if (len == 0 && inlineReadMissed_ && !socketReadable(0)) return false;
    moved = recvPass(&failed, &inlineFds_, &open, &slotWait, len == 0 ? 1 : p_.nSockets, /*onePart=*/true);
    inlineReadMissed_ = !moved;
  }
  return moved;
}

bool SocketConnection::socketReadable(uint32_t i) const {
  pollfd pfd{sockets_[i].fd(), POLLIN, 0};
  // An error or hang-up counts as readable: the read then reports it.
  return ::poll(&pfd, 1, 0) != 0;
}

void SocketConnection::posted() {
  // Send side: push the slot out now; the proxy is woken only for what the
  // kernel did not take (or when it holds the sockets itself).
  const FifoHeader* hdr = proxyEnd_.hdr;
  const uint32_t last = hdr->posted.load(std::memory_order_relaxed) - 1;
  if (p_.side == Side::Send && hdr->sizes[last % hdr->nSlots] <= inlineMaxBytes_ &&
      ready_.load(std::memory_order_acquire) && !halted()) {
    std::unique_lock<std::mutex> lock(pumpMu_, std::try_to_lock);
    if (lock.owns_lock() && !halted()) {
      inlineAtNs_.store(nowNs(), std::memory_order_relaxed);
      bool moved = false, failed = false;
      if (sendPass(&moved, &failed, &inlineFds_) || failed) return;
    }
  }
  ring(bell_);
}

void SocketConnection::released(uint64_t bytes) {
  // The executor took a piece small enough to read itself: it moves this
  // connection's next pieces, so the proxy stands back now rather than
  // keep yielding for a window after a call it served (it had taken over
  // while the executor slept, and an idle communicator's proxy yielding
  // for milliseconds kept a core from the ranks).
  // One clock read per freed slot: this runs for every piece received.
  if (p_.side == Side::Recv && bytes <= inlineMaxBytes_ && ready_.load(std::memory_order_acquire)) {
    inlineAtNs_.store(nowNs(), std::memory_order_relaxed);
    return;  // the executor is active: it reads into that slot on its next wait
  }
  // A proxy waiting for a free slot must hear of it; while the executor
  // moves the bytes itself, it reads into that slot on its next wait.
  if (!executorActive()) ring(bell_);
}

void SocketConnection::idle() {
  inlineAtNs_.store(0, std::memory_order_relaxed);
  ring(bell_);
}

SocketConnection::~SocketConnection() {
  if (p_.onDestroy) p_.onDestroy();
  destroying_.store(true);
  halt_.store(true);
  service_->remove(this);  // from here on this thread is the proxy
  // A collective completes once its last slot is posted, so a communicator
  // can be destroyed while that slot is still here: send what was posted as
  // long as the receiver keeps taking it, then say goodbye.
  if (p_.side == Side::Send && !failed_.load() && !(p_.abortFlag && p_.abortFlag->load())) {
    std::lock_guard<std::mutex> lock(pumpMu_);
    drainOnDestroy();
    closeOnDestroy();
  }
  leaveOnStop();
}

bool SocketConnection::progress() {
  if (done_) return false;
  if (halted()) {
    done_ = true;
    leaveOnStop();
    return false;
  }
  return p_.side == Side::Send ? sendStep() : recvStep();
}

void SocketConnection::failed(const std::exception& e) noexcept {
  done_ = true;
  failWith(std::string("proxy failed: ") + e.what());
}

int64_t SocketConnection::idleWait(std::vector<pollfd>* fds) {
  if (done_) return -1;
  if (p_.side == Side::Recv && !ready_.load(std::memory_order_relaxed)) {
    fds->push_back(pollfd{starved_ ? -1 : listener_.fd(), POLLIN, 0});
    for (auto& a : pending_) fds->push_back(pollfd{a.sock.fd(), POLLIN, 0});
    return kAcceptPollSliceMs * 1000 * 1000;  // deadlines nobody rings for
  }
  // The executor is moving these bytes itself: it rings when it stops or
  // leaves something undone, and the window bounds the nap if it does not.
  if (lockMissed_ || (p_.side == Side::Recv && executorActive())) {
    const int64_t left = inlineAtNs_.load(std::memory_order_relaxed) + yieldWindowNs() - nowNs();
    return std::clamp<int64_t>(left, 1000 * 1000, kProxySleepSliceNs);
  }
  const short events = p_.side == Side::Send ? POLLOUT : POLLIN;
  for (int fd : proxyFds_) fds->push_back(pollfd{fd, events, 0});
  return -1;  // otherwise the bell (a post, a freed slot) or a socket wakes it
}

bool SocketConnection::standsBack() const {
  // The executor rings when it stops moving these bytes (idle()) or leaves
  // a slot unsent (posted()), which ends the nap.
  return done_ || executorActive();
}

bool SocketConnection::halted() const {
  return halt_.load(std::memory_order_relaxed) || (p_.abortFlag && p_.abortFlag->load(std::memory_order_relaxed)) ||
         proxyEnd_.failed();
}

void SocketConnection::failWith(const std::string& why) {
  if (failed_.exchange(true)) return;
  halt_.store(true);
  ring(bell_);
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
// all from the rank's proxy thread, so silent or slow connects (a scanner, a
// flood) neither hold a thread each nor delay the real sockets behind them.
bool SocketConnection::acceptStep() {
  if (acceptDeadline_.passed()) {
    failWith("only " + std::to_string(arrived_) + " of " + std::to_string(p_.nSockets) + " sockets connected within " +
             std::to_string(p_.acceptTimeoutMs) + " ms" +
             (pending_.empty() ? "" : " (" + std::to_string(pending_.size()) + " connections still in their handshake)"));
    done_ = true;
    return false;
  }
  std::vector<pollfd> pfds;
  pfds.push_back(pollfd{starved_ ? -1 : listener_.fd(), POLLIN, 0});
  for (auto& a : pending_) pfds.push_back(pollfd{a.sock.fd(), POLLIN, 0});
  if (::poll(pfds.data(), pfds.size(), 0) < 0 && errno != EINTR) raiseErrno("poll");
  starved_ = false;
  bool moved = false;
  size_t k = 1;
  for (auto it = pending_.begin(); it != pending_.end(); ++k) {
    const bool ready = pfds[k].revents != 0;
    if (!ready && !it->handshake.deadline().passed()) {
      ++it;
      continue;
    }
    moved = true;
    const AcceptOutcome o = finishAccept(*it);
    if (o == AcceptOutcome::Joined) ++arrived_;
    if (o == AcceptOutcome::Pending) ++it;
    else it = pending_.erase(it);
  }
  if (pfds[0].revents != 0) {
    moved = true;
    starved_ = !acceptPending(acceptDeadline_);
  }
  if (arrived_ < p_.nSockets) return moved;
  listener_.close();
  pending_.clear();
  WEFT_INFO(kNet, "NET/Socket: %u sockets from %s connected (tag %lu)", p_.nSockets, p_.peerName.c_str(),
            static_cast<unsigned long>(p_.tag));
  ready_.store(true, std::memory_order_release);
  return true;
}

// Takes every connection waiting on the listener into `pending`. False when
// descriptors ran out: the listener then rests one slice (handshakes that
// end give theirs back) instead of spinning.
bool SocketConnection::acceptPending(Deadline deadline) {
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
    pending_.push_back(PendingAccept{std::move(s), from,
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
