// The sending proxy: writes posted slots to the sockets, part i of a large
// slot on socket i, a small slot whole on socket 0, and frees each slot once
// every part of it is in the kernel.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/util/log.h"
#include "transports/socket/socket_connection.h"

namespace weft {

using namespace socket_wire;

// How long a connection being destroyed waits for a full socket to take more
// of the last posted slots before it gives up on them.
static constexpr int kDrainStallMs = 100;

bool SocketConnection::pumpSend(uint32_t i, uint32_t posted, bool* failed) {
  FifoHeader* hdr = proxyEnd_.hdr;
  SendCursor& c = sendCursors_[i];
  const int fd = sockets_[i].fd();
  bool moved = false;
  c.blocked = false;
  while (c.seq != posted) {
    const uint32_t idx = c.seq % hdr->nSlots;
    const uint64_t bytes = hdr->sizes[idx];
    if (bytes > hdr->slotBytes) {
      failWith("slot " + std::to_string(c.seq) + " was posted with " + std::to_string(bytes) + " bytes, more than " +
               std::to_string(hdr->slotBytes));
      *failed = true;
      return moved;
    }
    uint64_t off, len;
    slotPart(bytes, p_.nSockets, i, &off, &len);
    if (len == 0 && !(i == 0 && bytes == 0)) {  // this slot has no part on socket i
      ++c.seq;
      moved = true;
      continue;
    }
    static const char kPadding[kHeadPayload] = {};
    const uint64_t wire = wireBytes(i, len, hdr->slotBytes);
    SlotHeader sh{bytes, c.seq, 0};
    iovec iov[3];
    int n = 0;
    if (c.sent < sizeof(sh)) iov[n++] = {reinterpret_cast<char*>(&sh) + c.sent, sizeof(sh) - c.sent};
    const uint64_t payloadSent = c.sent > sizeof(sh) ? c.sent - sizeof(sh) : 0;
    if (len > payloadSent)
      iov[n++] = {const_cast<char*>(sendBase(c.seq)) + off + payloadSent, static_cast<size_t>(len - payloadSent)};
    if (wire > std::max(len, payloadSent))
      iov[n++] = {const_cast<char*>(kPadding), static_cast<size_t>(wire - std::max(len, payloadSent))};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c.blocked = true;
        return moved;
      }
      int e = errno;
      failWith("socket " + std::to_string(i) + ": " +
               ((e == ECONNRESET || e == EPIPE || e == ENOTCONN) ? std::string("connection closed by peer: ")
                                                                 : std::string("socket error: ")) +
               strerror(e));
      *failed = true;
      return moved;
    }
    moved = true;
    c.sent += static_cast<uint64_t>(w);
    if (c.sent == sizeof(sh) + wire) {
      c.sent = 0;
      ++c.seq;
    }
  }
  return moved;
}

bool SocketConnection::pumpAllSockets(uint32_t posted, std::vector<int>* fullFds, bool* failed) {
  bool moved = false;
  fullFds->clear();
  for (uint32_t i = 0; i < p_.nSockets; ++i) {
    moved |= pumpSend(i, posted, failed);
    if (*failed) return moved;
    if (sendCursors_[i].blocked) fullFds->push_back(sockets_[i].fd());
  }
  // A slot is free again once every socket is past it.
  uint32_t all = posted;
  for (const SendCursor& c : sendCursors_)
    if (static_cast<int32_t>(c.seq - all) < 0) all = c.seq;
  for (; completed_ != all; ++completed_, moved = true) proxyEnd_.release();
  return moved;
}

void SocketConnection::drainOnDestroy() {
  const uint32_t posted = proxyEnd_.hdr->posted.load(std::memory_order_acquire);
  std::vector<int> fullFds;
  for (;;) {
    bool failed = false;
    bool moved = pumpAllSockets(posted, &fullFds, &failed);
    if (failed || fullFds.empty()) return;  // failed, or all of it is in the kernel
    if (moved) continue;
    // A receiver that takes nothing for this long is not draining.
    pollfd pfds[kMaxSockets];
    for (size_t i = 0; i < fullFds.size(); ++i) pfds[i] = pollfd{fullFds[i], POLLOUT, 0};
    if (::poll(pfds, fullFds.size(), kDrainStallMs) <= 0) return;
  }
}

bool SocketConnection::sendPass(bool* moved, bool* failed, std::vector<int>* fullFds) {
  const uint32_t posted = proxyEnd_.hdr->posted.load(std::memory_order_acquire);
  *moved = pumpAllSockets(posted, fullFds, failed);
  if (*failed) return false;
  for (const SendCursor& c : sendCursors_)
    if (c.seq != posted || c.sent != 0) return false;
  return true;
}

bool SocketConnection::sendStep() {
  // The executor holding the lock is sending these slots itself: do not
  // queue behind it (its unlock would then cost a futex wake-up). It rings
  // when it leaves something unsent, which the service's bell catches.
  std::unique_lock<std::mutex> lock(pumpMu_, std::try_to_lock);
  lockMissed_ = !lock.owns_lock();
  if (lockMissed_) return false;
  if (halted()) return false;  // abandonUserMemory() may have stopped it
  bool failed = false, moved = false;
  sendPass(&moved, &failed, &proxyFds_);
  if (failed) done_ = true;
  return moved;
}

void SocketConnection::closeOnDestroy() {
  bool drained = !failed_.load() && completed_ == proxyEnd_.hdr->posted.load(std::memory_order_acquire);
  for (const SendCursor& c : sendCursors_) drained = drained && c.sent == 0;
  if (!drained) return;  // the receiver sees the cut and reports it
  SlotHeader bye{kCloseMarker, completed_, 0};
  for (auto& s : sockets_) trySendAll(s.fd(), &bye, sizeof(bye), Deadline::after(100), StopFlags{});
}

}  // namespace weft
