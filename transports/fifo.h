// The slot FIFO: the one data structure every transport provides.
//
// A connection in one direction is a FIFO of nSlots slots of slotBytes each,
// with two counters: `posted` (advanced by the producer) and `consumed`
// (advanced by the consumer). The producer takes the next free slot, writes
// or reduces straight into it and posts it; the consumer waits for a posted
// slot, reads or reduces straight out of it and frees it. Nothing is copied
// on the way except by the transport's own mover (a proxy thread for
// socket/ib).
//
// The header and slots may live in shared memory (shm), in a staging buffer
// drained by a proxy thread (socket, ib) or in GPU memory (p2p). The
// process-local FifoEnd adds the doorbells to ring so that a sleeping peer
// wakes up.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "src/util/doorbell.h"

namespace weft {

constexpr uint32_t kFifoMaxSlots = 32;
constexpr uint32_t kFifoMagic = 0x57465431;  // "WFT1"

// Geometry of the connections plans run on: pieces are at most
// slotBytes, and a FIFO holds nSlots pieces. Algorithms size their chunks so
// that no ring of waiting ranks can fill every FIFO (chunk < FIFO capacity).
struct FifoGeometry {
  uint64_t slotBytes = 512 * 1024;
  uint32_t nSlots = 8;
};

// The number of elements of one piece: what a FIFO slot holds.
inline uint64_t pieceElems(const FifoGeometry& g, uint32_t elemSize) {
  uint64_t e = g.slotBytes / elemSize;
  return e ? e : 1;
}

struct alignas(64) FifoHeader {
  uint32_t magic;
  uint32_t nSlots;
  uint64_t slotBytes;
  uint64_t dataOffset;  // from the header to slot 0, page aligned
  alignas(64) std::atomic<uint32_t> posted;
  alignas(64) std::atomic<uint32_t> consumed;
  // Non-zero once the connection failed (a proxy lost its socket, a peer
  // aborted): both ends stop waiting and report weftRemoteError.
  alignas(64) std::atomic<uint32_t> failed;
  uint64_t sizes[kFifoMaxSlots];  // bytes the producer put in each slot
};

// Bytes needed for a FIFO of this geometry (header + page-aligned slots).
size_t fifoBytes(uint32_t nSlots, uint64_t slotBytes);
// Initialises a FIFO in `mem` (at least fifoBytes bytes, page aligned).
FifoHeader* fifoInit(void* mem, uint32_t nSlots, uint64_t slotBytes);

// A transport whose bytes a proxy thread moves (socket) can let the
// executor move them itself: on a post it pushes the slot out at once, and
// while it would wait for a slot it reads what has arrived. A small message
// then crosses without waking the proxy and without the proxy waking the
// executor, two thread hand-offs per hop that cost tens of microseconds
// each. Whoever moves bytes first does it; the proxy stays for the rest.
class FifoProgress {
 public:
  // The executor waits on this FIFO for a piece of pieceBytes: move what
  // can be moved now. True when something moved (a slot posted or freed).
  // A transport may decline (large pieces: its proxy moving them while the
  // executor computes is the overlap that gives bandwidth).
  virtual bool tryProgress(uint64_t pieceBytes) = 0;
  // The executor posted a slot (producer end) / freed one (consumer end).
  virtual void posted() = 0;
  virtual void released() = 0;
  // The executor stops moving bytes for now (it is going to sleep): the
  // proxy must watch the sockets itself again.
  virtual void idle() = 0;

 protected:
  ~FifoProgress() = default;
};

// One end of a FIFO as seen by one process: where the FIFO is, and whom to
// wake. Copyable, no ownership.
//
// The geometry is this process's copy, set by attach(): a header in shared
// memory is writable by the peer, and a slot count or size read from it on
// every access would let a broken or hostile peer steer this process's
// writes.
struct FifoEnd {
  FifoHeader* hdr = nullptr;
  char* data = nullptr;            // slot 0
  FifoGeometry geometry;
  Doorbell* producerBell = nullptr;  // rung when a slot is freed
  Doorbell* consumerBell = nullptr;  // rung when a slot is posted
  // Set on the executor's end of a proxied FIFO: post() and release() tell
  // it instead of ringing, and a waiting executor may call tryProgress().
  FifoProgress* progress = nullptr;

  void attach(FifoHeader* h, char* slots, const FifoGeometry& g) {
    hdr = h;
    data = slots;
    geometry = g;
  }
  bool valid() const { return hdr != nullptr; }
  uint64_t slotBytes() const { return geometry.slotBytes; }

  // Producer side. Returns the next free slot or nullptr when the FIFO is full.
  void* tryAcquire() const {
    uint32_t p = hdr->posted.load(std::memory_order_relaxed);
    uint32_t c = hdr->consumed.load(std::memory_order_acquire);
    if (p - c >= geometry.nSlots) return nullptr;
    return data + (p % geometry.nSlots) * geometry.slotBytes;
  }
  // Publishes the slot returned by tryAcquire, holding `bytes` bytes.
  void post(uint64_t bytes) const {
    uint32_t p = hdr->posted.load(std::memory_order_relaxed);
    hdr->sizes[p % geometry.nSlots] = bytes;
    hdr->posted.store(p + 1, std::memory_order_release);
    if (progress) progress->posted();
    else if (consumerBell) ring(consumerBell);
  }

  // Consumer side. Returns the oldest posted slot (and its size) or nullptr.
  const void* tryPeek(uint64_t* bytes) const {
    uint32_t c = hdr->consumed.load(std::memory_order_relaxed);
    uint32_t p = hdr->posted.load(std::memory_order_acquire);
    if (p == c) return nullptr;
    *bytes = hdr->sizes[c % geometry.nSlots];
    return data + (c % geometry.nSlots) * geometry.slotBytes;
  }
  // Frees the slot returned by tryPeek.
  void release() const {
    uint32_t c = hdr->consumed.load(std::memory_order_relaxed);
    hdr->consumed.store(c + 1, std::memory_order_release);
    if (progress) progress->released();
    else if (producerBell) ring(producerBell);
  }

  bool failed() const { return hdr->failed.load(std::memory_order_acquire) != 0; }
  void fail() const {
    hdr->failed.store(1, std::memory_order_release);
    if (producerBell) ring(producerBell);
    if (consumerBell) ring(consumerBell);
  }
};

}  // namespace weft
