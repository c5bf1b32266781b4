// Flow control and ordering for RDMA writes into a peer's slot FIFO. Pure.
//
// The sender RDMA-writes slot number `seq` into the receiver's slot
// seq % nSlots. It may only do so once the receiver's executor has released
// the slot's previous occupant (seq - nSlots): the receiver RDMA-writes its
// `consumed` counter into a sender-side credit word, and CreditWindow turns
// that word into permission. With several QPs per connection, completions
// (sender: write done; receiver: immediate arrived) can come back out of
// order across QPs; InOrderWindow turns them back into in-order releases or
// posts, because the FIFO counters only move forward one slot at a time.
#pragma once

#include <cstdint>
#include <optional>

#include "transports/fifo.h"

namespace weft::ib {

// The 32-bit immediate of a write-with-immediate: slot index in the top 5
// bits (kFifoMaxSlots is 32), byte count in the low 27 bits.
constexpr uint32_t kImmSlotBits = 5;
constexpr uint32_t kImmSizeBits = 32 - kImmSlotBits;
constexpr uint64_t kImmMaxBytes = (uint64_t(1) << kImmSizeBits) - 1;
static_assert((1u << kImmSlotBits) >= kFifoMaxSlots, "slot index must fit the immediate");

struct ImmData {
  uint32_t slot = 0;
  uint32_t bytes = 0;
};

uint32_t encodeImm(uint32_t slot, uint64_t bytes);  // throws weftInternalError when out of range
ImmData decodeImm(uint32_t imm);

// Sender side: how many slots of the remote FIFO it may write.
class CreditWindow {
 public:
  // start: the value both counters begin at (0 for a connection; tests use
  // values near 2^32 to check the wrap). Must be a multiple of nSlots so that
  // nextSlot() matches the FIFO's own slot numbering.
  explicit CreditWindow(uint32_t nSlots, uint32_t start = 0);

  uint32_t nSlots() const { return nSlots_; }
  uint32_t written() const { return written_; }
  uint32_t remoteConsumed() const { return remoteConsumed_; }
  uint32_t inFlight() const { return written_ - remoteConsumed_; }
  bool canWrite() const { return inFlight() < nSlots_; }
  // Remote slot index of the next write.
  uint32_t nextSlot() const { return written_ % nSlots_; }

  // Records one write; throws weftInternalError when no credit is left
  // (a bug: the caller checks canWrite).
  void onWrite();

  // The credit word now holds `consumed` (the receiver's counter, wrapping).
  // Returns how many slots it freed. A value that goes backwards or past
  // what was written cannot come from a correct peer: weftRemoteError.
  uint32_t onCredit(uint32_t consumed);

 private:
  uint32_t nSlots_;
  uint32_t written_;
  uint32_t remoteConsumed_;
};

// Receiver side: when to send the consumed counter back. Every change is
// sent (a batched threshold could leave the sender starved at the end of a
// message), but never more than `maxOutstanding` unacknowledged writes, so
// the send queue cannot overflow.
class CreditReturn {
 public:
  explicit CreditReturn(uint32_t maxOutstanding) : maxOutstanding_(maxOutstanding) {}
  // The value to write now, if any; the caller then calls onSent.
  std::optional<uint32_t> due(uint32_t consumed) const {
    if (consumed == lastSent_ || outstanding_ >= maxOutstanding_) return std::nullopt;
    return consumed;
  }
  void onSent(uint32_t value) {
    lastSent_ = value;
    ++outstanding_;
  }
  void onSendCompleted() {
    if (outstanding_) --outstanding_;
  }
  uint32_t outstanding() const { return outstanding_; }
  uint32_t lastSent() const { return lastSent_; }

 private:
  uint32_t maxOutstanding_;
  uint32_t lastSent_ = 0;
  uint32_t outstanding_ = 0;
};

// Completions of sequence numbers [base, base + nSlots) arriving in any
// order; take() hands them out in sequence order.
class InOrderWindow {
 public:
  explicit InOrderWindow(uint32_t nSlots);

  uint32_t next() const { return next_; }

  // Marks the completion of the sequence number whose slot is `slot` (the
  // only one in the window: at most nSlots are in flight) and its byte
  // count. A slot already marked is a protocol error: weftRemoteError.
  void mark(uint32_t slot, uint32_t bytes);
  // Whether the next sequence number has completed; if so returns its bytes
  // and advances.
  std::optional<uint32_t> take();

 private:
  uint32_t nSlots_;
  uint32_t next_ = 0;
  bool done_[kFifoMaxSlots] = {};
  uint32_t bytes_[kFifoMaxSlots] = {};
};

}  // namespace weft::ib
