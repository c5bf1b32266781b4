#include "transports/ib/flush_schedule.h"

#include "src/util/error.h"

namespace weft::ib {

FlushDecision decideFlush(bool flushDisabled, int cudaDev, int ccMajor, int ccMinor) {
  if (flushDisabled) return {false, "no flush: WEFT_GDR_FLUSH_DISABLE"};
  const std::string gpu = "GPU " + std::to_string(cudaDev);
  if (ccMajor >= 9)
    return {false, "no flush: " + gpu + " is compute capability " + std::to_string(ccMajor) + "." +
                       std::to_string(ccMinor < 0 ? 0 : ccMinor) + " (orders RDMA writes before their completion)"};
  if (ccMajor < 0) return {true, "flush by RDMA read (" + gpu + " compute capability unknown)"};
  return {true, "flush by RDMA read"};
}

void FlushSchedule::arrived(uint32_t slot, uint32_t bytes) {
  if (count_ == kFifoMaxSlots)
    raise(weftRemoteError, "NET/IB: more than %u slots arrived without being posted", kFifoMaxSlots);
  bytes_[(head_ + count_) % kFifoMaxSlots] = bytes;
  ++count_;
  if (!enabled_) {
    ready_ = count_;
    return;
  }
  if (bytes) {
    ++uncoveredData_;
    lastDataSlot_ = slot;
  }
  // Nothing ahead waits for a read and this slot brings no data: ready.
  if (!inFlight_ && uncoveredData_ == 0) ready_ = count_;
}

void FlushSchedule::readPosted() {
  if (!readDue()) raise(weftInternalError, "NET/IB: flush read posted when none was due");
  inFlight_ = true;
  covered_ = count_ - ready_;
  uncoveredData_ = 0;
}

void FlushSchedule::readDone() {
  if (!inFlight_) raise(weftInternalError, "NET/IB: flush read completed, but none was in flight");
  inFlight_ = false;
  ready_ += covered_;
  covered_ = 0;
  // Empty slots that arrived behind the read need no read of their own.
  if (uncoveredData_ == 0) ready_ = count_;
}

std::optional<uint32_t> FlushSchedule::take() {
  if (ready_ == 0) return std::nullopt;
  uint32_t b = bytes_[head_];
  head_ = (head_ + 1) % kFifoMaxSlots;
  --count_;
  --ready_;
  return b;
}

}  // namespace weft::ib
