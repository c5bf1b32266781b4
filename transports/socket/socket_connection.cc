#include "transports/socket/socket_connection.h"

#include <sys/mman.h>

#include <cstring>

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

using namespace socket_wire;

// How long a sleeping proxy thread waits before re-checking its halt flags.
static constexpr int64_t kSleepSliceNs = 10 * 1000 * 1000;
// How long a silent accepted socket may take to send its hello.
static constexpr int64_t kHelloTimeoutMs = 2000;

StagingFifo::StagingFifo(const plan::FifoGeometry& g) {
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
  end.hdr = staging_.header();
  end.data = staging_.slots();
  if (p_.side == Side::Send) {
    end.producerBell = p_.localBell;  // the executor produces; freeing a slot wakes it
    end.consumerBell = &bell_;        // posting a slot wakes the proxy
  } else {
    end.producerBell = &bell_;        // freeing a slot wakes the proxy
    end.consumerBell = p_.localBell;  // posting a slot wakes the executor
  }
  executorEnd_ = end;
  proxyEnd_ = end;
  done_.assign(p_.nSockets, 0);
  recvSizes_.assign(p_.geometry.nSlots, 0);
  if (p_.side == Side::Send) {
    socketsReady_.store(true);
  } else {
    sockets_.resize(p_.nSockets);
  }
  for (uint32_t i = 0; i < p_.nSockets; ++i) workers_.emplace_back([this, i] { run(i); });
}

SocketConnection::~SocketConnection() {
  destroying_.store(true);
  halt_.store(true);
  ring(&bell_);
  for (auto& t : workers_) t.join();
}

void SocketConnection::run(uint32_t index) {
  setLogRank(p_.rank);
  try {
    if (p_.side == Side::Send) sendWorker(index);
    else recvWorker(index);
  } catch (const std::exception& e) {
    failWith(std::string("proxy thread failed: ") + e.what());
  }
}

bool SocketConnection::halted() const {
  return halt_.load(std::memory_order_relaxed) || (p_.abortFlag && p_.abortFlag->load(std::memory_order_relaxed)) ||
         proxyEnd_.failed();
}

template <class Pred>
bool SocketConnection::waitUntil(Pred pred) {
  for (int i = spinCount(); i > 0; --i) {
    if (pred()) return true;
    cpuRelax();
  }
  for (;;) {
    uint32_t seen = bell_.seq.load(std::memory_order_acquire);
    if (pred()) return true;
    if (halted()) return false;
    sleepOn(&bell_, seen, kSleepSliceNs);
  }
}

void SocketConnection::failWith(const std::string& why) {
  if (failed_.exchange(true)) return;
  halt_.store(true);
  ring(&bell_);
  // Wake workers blocked in socket calls; their descriptors stay open until
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

void SocketConnection::finishedUpTo(uint32_t index, uint32_t count) {
  std::lock_guard<std::mutex> lock(progressMu_);
  done_[index] = count;
  uint32_t all = count;
  for (uint32_t d : done_)
    if (static_cast<int32_t>(d - all) < 0) all = d;
  while (completed_ != all) {
    if (p_.side == Side::Send) {
      proxyEnd_.release();
    } else {
      // FifoEnd::post writes the size of slot `posted`, which is completed_.
      proxyEnd_.post(recvSizes_[completed_ % p_.geometry.nSlots]);
    }
    ++completed_;
  }
}

void SocketConnection::sendWorker(uint32_t index) {
  FifoHeader* hdr = proxyEnd_.hdr;
  const int fd = sockets_[index].fd();
  StopFlags stop{&halt_, p_.abortFlag};
  for (uint32_t slot = 0;; ++slot) {
    bool ready = waitUntil(
        [&] { return static_cast<int32_t>(hdr->posted.load(std::memory_order_acquire) - slot) > 0; });
    if (!ready) {
      if (destroying_.load() && !failed_.load()) {
        // Nothing left to send: tell the receiver this is an orderly end.
        SlotHeader bye{kCloseMarker};
        trySendAll(fd, &bye, sizeof(bye), Deadline::after(100), StopFlags{});
      }
      if (p_.abortFlag && p_.abortFlag->load()) proxyEnd_.fail();
      return;
    }
    uint32_t idx = slot % hdr->nSlots;
    uint64_t bytes = hdr->sizes[idx];
    if (bytes > hdr->slotBytes) {
      failWith("slot " + std::to_string(slot) + " was posted with " + std::to_string(bytes) + " bytes, more than " +
               std::to_string(hdr->slotBytes));
      return;
    }
    uint64_t off, len;
    slotPart(bytes, p_.nSockets, index, &off, &len);
    SlotHeader sh{bytes};
    int err = 0;
    IoStatus st = trySendTwo(fd, &sh, sizeof(sh), proxyEnd_.data + idx * hdr->slotBytes + off, len, noDeadline(),
                             stop, &err);
    if (st != IoStatus::Ok) {
      if (st == IoStatus::Stopped) {
        if (p_.abortFlag && p_.abortFlag->load()) proxyEnd_.fail();
        return;  // halted mid-slot: the receiver sees the cut and reports it
      }
      failWith(std::string("socket ") + std::to_string(index) + ": " + ioStatusName(st) +
               (err ? std::string(": ") + strerror(err) : std::string()));
      return;
    }
    finishedUpTo(index, slot + 1);
  }
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
    SocketHello h;
    Deadline helloDeadline{std::min(deadline.atNs, Deadline::after(kHelloTimeoutMs).atNs)};
    IoStatus st = tryRecvAll(s.fd(), &h, sizeof(h), helloDeadline, stop);
    std::string bad;
    if (st != IoStatus::Ok) bad = st == IoStatus::Eof ? "closed before a complete hello" : ioStatusName(st);
    else if (h.magic != kHelloMagic || h.version != kVersion) bad = "bad magic (not a weft socket hello)";
    else if (memcmp(h.secret, p_.secret.data(), p_.secret.size()) != 0) bad = "wrong secret";
    else if (h.senderRank != p_.peer || h.tag != p_.tag || h.nonce != p_.nonce)
      bad = "hello for another edge (rank " + std::to_string(h.senderRank) + ", tag " + std::to_string(h.tag) + ")";
    else if (h.index >= p_.nSockets || sockets_[h.index].valid())
      bad = "bad or repeated socket index " + std::to_string(h.index);
    if (!bad.empty()) {
      if (st == IoStatus::Stopped) return false;
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

void SocketConnection::recvWorker(uint32_t index) {
  if (index == 0) {
    bool ok = acceptAll();
    socketsReady_.store(ok, std::memory_order_release);
    ring(&bell_);
    if (!ok) return;
  } else if (!waitUntil([&] { return socketsReady_.load(std::memory_order_acquire); })) {
    return;
  }
  FifoHeader* hdr = proxyEnd_.hdr;
  const int fd = sockets_[index].fd();
  StopFlags stop{&halt_, p_.abortFlag};
  for (uint32_t slot = 0;; ++slot) {
    SlotHeader sh;
    int err = 0;
    IoStatus st = tryRecvAll(fd, &sh, sizeof(sh), noDeadline(), stop, &err);
    if (st == IoStatus::Ok && sh.bytes == kCloseMarker) {
      WEFT_TRACE(kNet, "NET/Socket: %s closed socket %u in order", p_.peerName.c_str(), index);
      return;
    }
    if (st == IoStatus::Ok && sh.bytes > hdr->slotBytes) {
      failWith("socket " + std::to_string(index) + " announced a " + std::to_string(sh.bytes) +
               "-byte slot, more than " + std::to_string(hdr->slotBytes) + " (garbage on the stream?)");
      return;
    }
    if (st == IoStatus::Ok) {
      bool free = waitUntil([&] {
        return slot - hdr->consumed.load(std::memory_order_acquire) < hdr->nSlots;
      });
      if (!free) st = IoStatus::Stopped;
    }
    uint32_t idx = slot % hdr->nSlots;
    if (st == IoStatus::Ok) {
      uint64_t off, len;
      slotPart(sh.bytes, p_.nSockets, index, &off, &len);
      st = tryRecvAll(fd, proxyEnd_.data + idx * hdr->slotBytes + off, len, noDeadline(), stop, &err);
    }
    if (st != IoStatus::Ok) {
      if (st == IoStatus::Stopped) {
        if (p_.abortFlag && p_.abortFlag->load()) proxyEnd_.fail();
        return;
      }
      failWith(std::string("socket ") + std::to_string(index) + ": " +
               (st == IoStatus::Eof ? std::string("connection closed without an orderly end")
                                    : std::string(ioStatusName(st))) +
               (err ? std::string(": ") + strerror(err) : std::string()));
      return;
    }
    if (index == 0) recvSizes_[idx] = sh.bytes;
    finishedUpTo(index, slot + 1);
  }
}

}  // namespace weft
