// When slots that the HCA wrote into GPU memory may be handed to the GPU.
//
// The completion that announces a slot lands in host memory and can
// overtake the slot's data, which is still on its way over PCIe into the
// GPU. A read of that GPU memory issued through the same HCA cannot pass
// the earlier writes on the same path, so once such a read returns, every
// slot that arrived before it was issued is visible to the GPU. One read
// therefore covers a batch: at most one is in flight, and slots that arrive
// meanwhile wait for the next one. Empty slots carry no data and need no
// read, but keep their place in order. With flushing off (host slots, or
// WEFT_GDR_FLUSH_DISABLE) every slot is ready as it arrives. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "transports/fifo.h"

namespace weft::ib {

// Whether a receiver with GPU slots flushes at all. GPUs of compute
// capability 9.0 and later (Hopper on) do not let a completion's
// visibility pass the data of the RDMA writes before it on the way into
// their memory, so the read is pure cost there and is skipped; older or
// unknown GPUs flush unless WEFT_GDR_FLUSH_DISABLE says otherwise.
struct FlushDecision {
  bool flush = true;
  std::string reason;  // "flush by RDMA read", "no flush: ...", for the connection's log line
};
// ccMajor/ccMinor < 0: unknown (the driver could not be asked).
FlushDecision decideFlush(bool flushDisabled, int cudaDev, int ccMajor, int ccMinor);

class FlushSchedule {
 public:
  explicit FlushSchedule(bool enabled) : enabled_(enabled) {}

  bool enabled() const { return enabled_; }

  // The next slot in sequence order arrived holding `bytes`. More than
  // kFifoMaxSlots waiting is a protocol error (weftRemoteError).
  void arrived(uint32_t slot, uint32_t bytes);

  // Whether a read should be issued now, and from which slot (the newest
  // one with data: any address of the registered memory would do, a slot
  // just written is simply the obvious one).
  bool readDue() const { return enabled_ && !inFlight_ && uncoveredData_ > 0; }
  uint32_t readSlot() const { return lastDataSlot_; }
  // The read was posted: it covers every slot waiting now.
  void readPosted();
  // The read completed. Throws weftInternalError when none was in flight.
  void readDone();
  bool readInFlight() const { return inFlight_; }

  // Bytes of the oldest slot that may be posted to the consumer, in order.
  std::optional<uint32_t> take();
  size_t waiting() const { return count_; }  // arrived and not yet taken

 private:
  bool enabled_;
  uint32_t bytes_[kFifoMaxSlots] = {};  // ring of waiting slots' sizes, oldest at head_
  size_t head_ = 0;
  size_t count_ = 0;
  size_t ready_ = 0;          // oldest waiting slots that may be posted
  size_t covered_ = 0;        // next ones, covered by the read in flight
  size_t uncoveredData_ = 0;  // slots with data after those, not covered by any read
  bool inFlight_ = false;
  uint32_t lastDataSlot_ = 0;
};

}  // namespace weft::ib
