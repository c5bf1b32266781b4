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
  // The executor posted a slot (producer end) / freed one that held
  // `bytes` bytes (consumer end; the size is read before the slot is freed,
  // as the producer may post into it again at once).
  virtual void posted() = 0;
  virtual void released(uint64_t bytes) = 0;
  // The executor stops moving bytes for now (it is going to sleep): the
  // proxy must watch the sockets itself again.
  virtual void idle() = 0;

 protected:
  ~FifoProgress() = default;
};

// A transport whose mover runs in this process (socket) can move a large
// slot's bytes straight from and into the caller's memory instead of the
// slot, which saves the executor a copy per byte each way. The interface
// speaks of memory, not of algorithms:
// - producer end: "slot i's bytes are at this address" (FifoEnd::postFrom);
//   the mover reads them there until it frees the slot, so the caller
//   leaves that memory alone (and valid) until then;
// - consumer end: "slot seq's bytes, if they have not started arriving yet,
//   belong at this address" (FifoEnd::offerLanding); the mover decides once
//   per slot, before its first payload byte, and says at the post whether
//   they went there (FifoEnd::landedAt), else they are in the slot as usual.
// Smaller pieces keep the slot path: for them the copy is cheap and the
// bookkeeping is not.
class FifoUserMemory {
 public:
  // Pieces of fewer bytes travel through the slot.
  uint64_t minBytes = 0;
  // Ends every use of the caller's memory by the mover before the caller
  // returns early (an error): a send still reading from it or a receive
  // already writing into it fails the connection. Blocks for at most one
  // pass of the mover.
  virtual void abandonUserMemory() = 0;

  // Producer: where the bytes of the slot in entry i are (nullptr: in the
  // slot), and which slot that is (seq + 1): a slot posted by other means
  // (a GPU posting host FIFO slots directly) never inherits an address.
  // Written before the post, read by the mover after it.
  const void* sendFrom[kFifoMaxSlots] = {};
  uint32_t sendSeq[kFifoMaxSlots] = {};
  // Consumer: the caller's offer for slot entry i: seq + 1 (0: none), where
  // and how many bytes.
  std::atomic<uint32_t> offerSeq[kFifoMaxSlots] = {};
  std::atomic<char*> offerAt[kFifoMaxSlots] = {};
  std::atomic<uint64_t> offerBytes[kFifoMaxSlots] = {};
  // Written by the mover before it posts entry i: where its bytes went
  // (nullptr: into the slot).
  char* landed[kFifoMaxSlots] = {};

 protected:
  ~FifoUserMemory() = default;
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
  // Set on the executor's end when the mover can use the caller's memory.
  FifoUserMemory* userMemory = nullptr;
  // GPU FIFOs (p2p) only: a word in the producer's GPU memory that the
  // device consumer keeps equal to hdr->consumed, so the device producer
  // polls its own memory for credit (cuda::DevFifo::credit). Null elsewhere.
  uint32_t* credit = nullptr;

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
  void post(uint64_t bytes) const { postFrom(nullptr, bytes); }
  // Publishes the slot returned by tryAcquire, whose `bytes` bytes are at
  // `from` instead of in the slot (userMemory only; nullptr: in the slot).
  void postFrom(const void* from, uint64_t bytes) const {
    uint32_t p = hdr->posted.load(std::memory_order_relaxed);
    if (userMemory) {
      userMemory->sendFrom[p % geometry.nSlots] = from;
      userMemory->sendSeq[p % geometry.nSlots] = p + 1;
    }
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
  // Where the bytes of the slot tryPeek returned went when the mover put
  // them at an offered address (userMemory only); nullptr: in the slot.
  const char* landedAt() const {
    if (!userMemory) return nullptr;
    return userMemory->landed[hdr->consumed.load(std::memory_order_relaxed) % geometry.nSlots];
  }
  // Asks that the bytes of the slot `ahead` places after the next one to
  // peek land at `at` (userMemory only; ahead <= nSlots: at nSlots, the
  // entry of the slot being consumed, whose release keeps the offer). The
  // caller must then consume that slot with `at` still valid, and must not
  // touch [at, at + bytes) until it has. Only the first offer for a slot
  // counts.
  void offerLanding(uint32_t ahead, char* at, uint64_t bytes) const {
    const uint32_t seq = hdr->consumed.load(std::memory_order_relaxed) + ahead;
    const uint32_t i = seq % geometry.nSlots;
    if (userMemory->offerSeq[i].load(std::memory_order_relaxed) == seq + 1) return;
    userMemory->offerAt[i].store(at, std::memory_order_relaxed);
    userMemory->offerBytes[i].store(bytes, std::memory_order_relaxed);
    userMemory->offerSeq[i].store(seq + 1, std::memory_order_release);
  }
  // Frees the slot returned by tryPeek.
  void release() const {
    uint32_t c = hdr->consumed.load(std::memory_order_relaxed);
    // The entry's next slot is decided only after this release; an offer
    // already made for it stays.
    if (userMemory) {
      uint32_t mine = c + 1;
      userMemory->offerSeq[c % geometry.nSlots].compare_exchange_strong(mine, 0, std::memory_order_relaxed);
    }
    const uint64_t bytes = progress ? hdr->sizes[c % geometry.nSlots] : 0;
    hdr->consumed.store(c + 1, std::memory_order_release);
    if (progress) progress->released(bytes);
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
