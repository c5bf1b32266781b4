// The receiving proxy: reads parts from every socket straight into their
// slots of the staging FIFO and posts each slot, in order, once all of its
// bytes are there.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/util/log.h"
#include "transports/socket/socket_connection.h"

namespace weft {

using namespace socket_wire;

namespace {

// What a recv that returned n <= 0 means: 0 when nothing is there (or
// EINTR: *retry), else -1 after setting *why (EOF or an error).
ssize_t recvOutcome(ssize_t n, bool* retry, std::string* why) {
  *retry = false;
  if (n == 0) {
    *why = "connection closed without an orderly end";
    return -1;
  }
  if (errno == EINTR) {
    *retry = true;
    return 0;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  int e = errno;
  *why = ((e == ECONNRESET || e == EPIPE || e == ENOTCONN) ? std::string("connection closed by peer: ")
                                                           : std::string("socket error: ")) +
         strerror(e);
  return -1;
}

// One non-blocking read. Returns bytes read, 0 when nothing is there, or -1
// after setting *why (EOF or an error).
ssize_t readSome(int fd, void* into, size_t bytes, std::string* why) {
  for (;;) {
    ssize_t n = ::recv(fd, into, bytes, MSG_DONTWAIT);
    if (n > 0) return n;
    bool retry = false;
    n = recvOutcome(n, &retry, why);
    if (!retry) return n;
  }
}

}  // namespace

ssize_t SocketConnection::readHeader(uint32_t i, std::string* why) {
  FifoHeader* hdr = proxyEnd_.hdr;
  RecvCursor& c = recvCursors_[i];
  const int fd = sockets_[i].fd();
  char* into = reinterpret_cast<char*>(&c.header) + c.headerGot;
  c.preread = 0;
  const uint32_t next = c.lastSeq + 1;  // socket 0 carries a part of every slot
  if (i != 0 || c.headerGot != 0 || hdr->slotBytes < kHeadPayload ||
      next - hdr->consumed.load(std::memory_order_acquire) >= hdr->nSlots)
    return readSome(fd, into, sizeof(c.header) - c.headerGot, why);
  iovec iov[2] = {{into, sizeof(c.header)}, {proxyEnd_.data + (next % hdr->nSlots) * hdr->slotBytes, kHeadPayload}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  for (;;) {
    ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n > 0) {
      if (static_cast<uint64_t>(n) > sizeof(c.header)) c.preread = static_cast<uint64_t>(n) - sizeof(c.header);
      return std::min<ssize_t>(n, sizeof(c.header));
    }
    bool retry = false;
    n = recvOutcome(n, &retry, why);
    if (!retry) return n;
  }
}

bool SocketConnection::pumpRecv(uint32_t i, bool* failed, bool onePart) {
  FifoHeader* hdr = proxyEnd_.hdr;
  RecvCursor& c = recvCursors_[i];
  const int fd = sockets_[i].fd();
  const std::string where = "socket " + std::to_string(i) + ": ";
  bool moved = false;
  std::string why;
  auto fail = [&](const std::string& what) {
    failWith(where + what);
    *failed = true;
    return moved;
  };
  c.waitsForSlot = false;
  while (!c.closed) {
    if (!c.inPart) {
      ssize_t n = readHeader(i, &why);
      if (n < 0) return fail(why);
      if (n == 0) return moved;
      moved = true;
      c.headerGot += static_cast<uint64_t>(n);
      if (c.headerGot < sizeof(c.header)) continue;
      c.headerGot = 0;
      const SlotHeader& h = c.header;
      if (h.bytes == kCloseMarker) {
        WEFT_TRACE(kNet, "NET/Socket: %s closed socket %u in order", p_.peerName.c_str(), i);
        c.closed = true;
        return moved;
      }
      if (h.bytes > hdr->slotBytes)
        return fail("announced a " + std::to_string(h.bytes) + "-byte slot, more than " +
                    std::to_string(hdr->slotBytes) + " (garbage on the stream?)");
      if ((c.lastSeq != ~0u && static_cast<int32_t>(h.seq - c.lastSeq) <= 0) ||
          static_cast<int32_t>(h.seq - completed_) < 0)
        return fail("part of slot " + std::to_string(h.seq) + " out of order (garbage on the stream?)");
      if (c.preread > 0 && h.seq != c.lastSeq + 1)  // read into slot lastSeq + 1
        return fail("part of slot " + std::to_string(h.seq) + " out of order (garbage on the stream?)");
      c.lastSeq = h.seq;
      slotPart(h.bytes, p_.nSockets, i, &c.offset, &c.length);
      if (c.length == 0 && !(i == 0 && h.bytes == 0))
        return fail("empty part of slot " + std::to_string(h.seq) + " (garbage on the stream?)");
      c.wire = wireBytes(i, c.length, hdr->slotBytes);
      c.got = c.preread;
      c.placed = false;
      c.inPart = true;
    }
    // The payload goes straight into its slot, once the executor freed it.
    const uint32_t seq = c.header.seq;
    if (seq - hdr->consumed.load(std::memory_order_acquire) >= hdr->nSlots) {
      c.waitsForSlot = true;
      return moved;
    }
    const uint32_t idx = seq % hdr->nSlots;
    if (!c.placed && !placePart(i)) return fail("sockets disagree on the size of slot " + std::to_string(seq));
    if (c.got < c.wire) {
      ssize_t n = readSome(fd, partTarget(i) + c.got, c.wire - c.got, &why);
      if (n < 0) return fail(why);
      if (n == 0) return moved;
      moved = true;
      c.got += static_cast<uint64_t>(n);
      if (c.got < c.wire) continue;
    }
    RecvSlot& slot = recvSlots_[idx];
    if (!slot.known) {
      slot.known = true;
      slot.bytes = c.header.bytes;
    }
    c.placed = false;
    slot.got += c.length;
    if (slot.bytes != c.header.bytes || slot.got > slot.bytes)
      return fail("sockets disagree on the size of slot " + std::to_string(seq));
    c.inPart = false;
    moved = true;
    if (onePart) return moved;
  }
  return moved;
}

bool SocketConnection::recvPass(bool* failed, std::vector<int>* readFds, uint32_t* open, bool* slotWait,
                                uint32_t nRead, bool onePart) {
  FifoHeader* hdr = proxyEnd_.hdr;
  bool moved = false;
  *open = 0;
  *slotWait = false;
  readFds->clear();
  for (uint32_t i = 0; i < p_.nSockets; ++i) {
    RecvCursor& c = recvCursors_[i];
    if (c.closed) continue;
    if (i >= nRead) {
      ++*open;
      continue;
    }
    moved |= pumpRecv(i, failed, onePart);
    if (*failed) return moved;
    if (c.closed) continue;
    ++*open;
    if (c.waitsForSlot) *slotWait = true;
    else readFds->push_back(sockets_[i].fd());
  }
  // Post, in order, every slot whose bytes have all arrived.
  for (;;) {
    RecvSlot& slot = recvSlots_[completed_ % hdr->nSlots];
    if (!slot.known || slot.got != slot.bytes) break;
    landed[completed_ % hdr->nSlots] = slot.landAt;
    proxyEnd_.post(slot.bytes);  // writes the size of slot `posted`, which is completed_
    slot = RecvSlot{};
    ++completed_;
    moved = true;
  }
  return moved;
}

bool SocketConnection::recvStep() {
  if (!ready_.load(std::memory_order_relaxed)) return acceptStep();
  // The executor reads these sockets while it waits: reading them here too
  // would only contend for the lock (it rings when it stops, idle()).
  if (executorActive()) return false;
  // The executor holding the lock is reading these sockets: stand back as
  // the send side does, until it rings or a short slice passes.
  std::unique_lock<std::mutex> lock(pumpMu_, std::try_to_lock);
  lockMissed_ = !lock.owns_lock();
  if (lockMissed_) return false;
  if (halted()) return false;  // abandonUserMemory() may have stopped it
  bool failed = false;
  uint32_t open = 0;
  const bool moved = recvPass(&failed, &proxyFds_, &open, &slotWait_);
  // Failed, or every socket ended in order.
  if (failed || open == 0) done_ = true;
  return moved;
}

}  // namespace weft
