#include "transports/socket/socket_connection.h"

#include <poll.h>
#include <sys/mman.h>

#include <cstring>

#include "src/bootstrap/handshake.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft {

using namespace socket_wire;


// How long a silent accepted socket may take to send its hello.
static constexpr int64_t kHelloTimeoutMs = 2000;

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
  inlineMaxBytes_ = inl == 1 ? (p_.oversubscribed ? 0 : kDefaultInlineMaxBytes) : static_cast<uint64_t>(inl);
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
    moved = recvPass(&failed, &inlineFds_, &open, &slotWait);
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

bool SocketConnection::acceptAll() {
  Deadline deadline = Deadline::after(p_.acceptTimeoutMs);
  StopFlags stop{&halt_, p_.abortFlag};
  uint32_t arrived = 0;
  while (arrived < p_.nSockets) {
    SocketAddress from;
    Socket s = acceptFrom(listener_, deadline, stop, &from);
    if (!s.valid()) {
      if (stop.raised()) {
        if (p_.abortFlag && p_.abortFlag->load()) proxyEnd_.fail();
        return false;
      }
      failWith("only " + std::to_string(arrived) + " of " + std::to_string(p_.nSockets) +
               " sockets connected within " + std::to_string(p_.acceptTimeoutMs) + " ms");
      return false;
    }
    SocketHello h{};
    Deadline helloDeadline{std::min(deadline.atNs, Deadline::after(kHelloTimeoutMs).atNs)};
    handshake::Session session;
    std::string bad;
    if (!handshake::acceptSide(s.fd(), p_.secret, handshake::Purpose::kSocketData, helloDeadline, stop, &session,
                               &bad) ||
        !handshake::recvSigned(s.fd(), session.toAcceptor, &h, sizeof(h), helloDeadline, stop, &bad)) {
      if (stop.raised()) return false;
    } else if (bad = socketHelloProblem(h, p_.peer, p_.tag, p_.nonce, p_.nSockets); bad.empty() &&
               sockets_[h.index].valid()) {
      bad = "repeated socket index " + std::to_string(h.index);
    }
    if (!bad.empty()) {
      WEFT_WARN("socket transport: rejected connection from %s: %s", from.str().c_str(), bad.c_str());
      continue;
    }
    sockets_[h.index] = std::move(s);
    ++arrived;
  }
  listener_.close();
  WEFT_INFO(kNet, "NET/Socket: %u sockets from %s connected (tag %lu)", p_.nSockets, p_.peerName.c_str(),
            static_cast<unsigned long>(p_.tag));
  return true;
}

}  // namespace weft
