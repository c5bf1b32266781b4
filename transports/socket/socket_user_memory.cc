// The socket mover's side of FifoUserMemory (transports/fifo.h): sending a
// slot from the address the executor gave, receiving a slot at the address
// it offered, and letting go of the caller's memory when a call ends early.
#include <algorithm>
#include <cstring>

#include "transports/socket/socket_connection.h"

namespace weft {

using namespace socket_wire;

const char* SocketConnection::sendBase(uint32_t seq) const {
  const uint32_t idx = seq % proxyEnd_.hdr->nSlots;
  const void* from = sendSeq[idx] == seq + 1 ? sendFrom[idx] : nullptr;
  return from ? static_cast<const char*>(from) : proxyEnd_.data + idx * proxyEnd_.hdr->slotBytes;
}

// Decided once per slot, before any of its payload is read: an offer counts
// only when it names this slot and its size, and only when no part of the
// slot travels padded (a padded part's tail would spill past it).
void SocketConnection::placeSlot(RecvSlot& slot, uint32_t seq, uint64_t bytes) {
  slot.placed = true;
  slot.landAt = nullptr;
  slot.bytes = bytes;
  if (minBytes == 0 || bytes < minBytes) return;
  const uint32_t i = seq % proxyEnd_.hdr->nSlots;
  if (offerSeq[i].load(std::memory_order_acquire) != seq + 1) return;
  if (offerBytes[i].load(std::memory_order_relaxed) != bytes) return;
  uint64_t off = 0, len = 0;
  slotPart(bytes, p_.nSockets, 0, &off, &len);
  if (wireBytes(0, len, proxyEnd_.hdr->slotBytes) != len) return;
  slot.landAt = offerAt[i].load(std::memory_order_relaxed);
}

bool SocketConnection::placePart(uint32_t i) {
  RecvCursor& c = recvCursors_[i];
  const uint32_t idx = c.header.seq % proxyEnd_.hdr->nSlots;
  RecvSlot& slot = recvSlots_[idx];
  if (!slot.placed) placeSlot(slot, c.header.seq, c.header.bytes);
  // A part that disagrees on the size would spill past the offered range.
  if (slot.landAt && slot.bytes != c.header.bytes) return false;
  // Socket 0 read the start of the payload with the header, into the slot.
  if (slot.landAt && c.preread)
    memcpy(slot.landAt + c.offset, proxyEnd_.data + idx * proxyEnd_.hdr->slotBytes + c.offset,
           std::min(c.preread, c.length));
  c.placed = true;
  return true;
}

char* SocketConnection::partTarget(uint32_t i) {
  const RecvCursor& c = recvCursors_[i];
  const uint32_t idx = c.header.seq % proxyEnd_.hdr->nSlots;
  const RecvSlot& slot = recvSlots_[idx];
  return (slot.landAt ? slot.landAt : proxyEnd_.data + idx * proxyEnd_.hdr->slotBytes) + c.offset;
}

// Under pumpMu_ no pass of the mover is running; after a failure none
// starts again (sendStep, recvStep and tryProgress check halted() under it).
void SocketConnection::abandonUserMemory() {
  std::lock_guard<std::mutex> lock(pumpMu_);
  const FifoHeader* hdr = proxyEnd_.hdr;
  bool inUse = false;
  if (p_.side == Side::Send) {
    const uint32_t posted = hdr->posted.load(std::memory_order_acquire);
    for (uint32_t s = completed_; s != posted; ++s)
      inUse |= sendBase(s) != proxyEnd_.data + (s % hdr->nSlots) * hdr->slotBytes;
  } else {
    for (const RecvSlot& slot : recvSlots_) inUse |= slot.landAt != nullptr;
    for (auto& o : offerSeq) o.store(0, std::memory_order_relaxed);
  }
  if (inUse) failWith("a call ended early while this connection still used its buffer");
}

}  // namespace weft
