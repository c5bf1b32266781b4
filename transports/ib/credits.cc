#include "transports/ib/credits.h"

#include "src/util/error.h"

namespace weft::ib {

uint32_t encodeImm(uint32_t slot, uint64_t bytes) {
  if (slot >= kFifoMaxSlots || bytes > kImmMaxBytes)
    raise(weftInternalError, "IB immediate cannot carry slot %u of %lu bytes (max %u slots, %lu bytes)", slot,
          static_cast<unsigned long>(bytes), kFifoMaxSlots, static_cast<unsigned long>(kImmMaxBytes));
  return (slot << kImmSizeBits) | static_cast<uint32_t>(bytes);
}

ImmData decodeImm(uint32_t imm) { return ImmData{imm >> kImmSizeBits, static_cast<uint32_t>(imm & kImmMaxBytes)}; }

CreditWindow::CreditWindow(uint32_t nSlots, uint32_t start) : nSlots_(nSlots), written_(start), remoteConsumed_(start) {
  if (nSlots == 0 || nSlots > kFifoMaxSlots)
    raise(weftInvalidArgument, "credit window of %u slots (1..%u)", nSlots, kFifoMaxSlots);
}

void CreditWindow::onWrite() {
  if (!canWrite())
    raise(weftInternalError, "IB sender wrote past its credits (%u written, %u consumed, %u slots)", written_,
          remoteConsumed_, nSlots_);
  ++written_;
}

uint32_t CreditWindow::onCredit(uint32_t consumed) {
  // Unsigned differences handle the 2^32 wrap of both counters.
  uint32_t advance = consumed - remoteConsumed_;
  if (advance == 0) return 0;
  if (advance > inFlight())
    raise(weftRemoteError, "IB peer returned credit %u, but only %u slots were written (%u already consumed)",
          consumed, written_, remoteConsumed_);
  remoteConsumed_ = consumed;
  return advance;
}

InOrderWindow::InOrderWindow(uint32_t nSlots) : nSlots_(nSlots) {
  if (nSlots == 0 || nSlots > kFifoMaxSlots)
    raise(weftInvalidArgument, "in-order window of %u slots (1..%u)", nSlots, kFifoMaxSlots);
}

void InOrderWindow::mark(uint32_t slot, uint32_t bytes) {
  if (slot >= nSlots_) raise(weftRemoteError, "IB completion for slot %u of a %u-slot FIFO", slot, nSlots_);
  if (done_[slot]) raise(weftRemoteError, "IB completion for slot %u arrived twice", slot);
  done_[slot] = true;
  bytes_[slot] = bytes;
}

std::optional<uint32_t> InOrderWindow::take() {
  uint32_t slot = next_ % nSlots_;
  if (!done_[slot]) return std::nullopt;
  done_[slot] = false;
  ++next_;
  return bytes_[slot];
}

}  // namespace weft::ib
