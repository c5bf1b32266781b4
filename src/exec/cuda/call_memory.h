// Scratch and in-place staging of a communicator's device calls, kept apart
// from the CUDA calls so the policy is unit-tested without a GPU (the
// allocator is handed in: stream-ordered pool memory in DeviceState, a
// counting fake in tests/devhost).
//
// Both blocks are reserved when the device state is made (init), of
// WEFT_DEVICE_SCRATCH bytes each, so a call whose scratch and staging fit
// allocates nothing: no implicit synchronisation for ranks sharing a GPU,
// nothing to refuse inside CUDA graph capture. A call that needs more grows
// the block outside capture (logged once per block, naming the setting) and
// is refused with weftInvalidUsage inside a capture. The block a call used
// stays alive while a launch or graph holds it (BlockRef).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "src/exec/cuda/launch_policy.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::cuda {

class CallMemory {
 public:
  using Allocate = std::function<BlockRef(size_t bytes)>;

  CallMemory(size_t reserveBytes, Allocate allocate, int rank)
      : allocate_(std::move(allocate)), rank_(rank), reserve_(reserveBytes) {
    if (reserve_) {
      scratch_ = allocate_(reserve_);
      stage_ = allocate_(reserve_);
    }
  }

  // A block of at least `bytes` (null for 0) for the call's scratch, or for
  // staging an in-place AllToAll's send buffer.
  const BlockRef& scratch(size_t bytes, bool captured) { return fit(scratch_, bytes, captured, "scratch", scratchLogged_); }
  const BlockRef& stage(size_t bytes, bool captured) { return fit(stage_, bytes, captured, "staging", stageLogged_); }

  const BlockRef& currentScratch() const { return scratch_; }
  const BlockRef& currentStage() const { return stage_; }
  size_t reserved() const { return reserve_; }
  uint64_t grownInCallPath() const { return grown_; }  // allocations made by calls

  void reset() {
    scratch_.reset();
    stage_.reset();
  }

 private:
  const BlockRef& fit(BlockRef& block, size_t bytes, bool captured, const char* what, bool& logged) {
    static const BlockRef none;
    if (!bytes) return block ? block : none;
    if (block && block->bytes >= bytes) return block;
    const std::string hint = std::to_string(bytes) + " bytes of device " + what + ", more than the " +
                             std::to_string(block ? block->bytes : 0) +
                             " reserved at init; set WEFT_DEVICE_SCRATCH to at least " + std::to_string(bytes);
    if (captured) {
      // raise() logs the message at WARN.
      raise(weftInvalidUsage, "rank %d: a call inside CUDA graph capture needs %s, or make the same call once "
            "outside capture first (see docs/cuda.md)", rank_, hint.c_str());
    }
    if (!logged)
      WEFT_WARN("rank %d: a device call needs %s to keep allocation out of the call path (allocated now)", rank_,
                hint.c_str());
    logged = true;
    // The old block is released once its last launch or graph lets go.
    block = allocate_(bytes);
    grown_++;
    return block;
  }

  Allocate allocate_;
  int rank_;
  size_t reserve_;
  BlockRef scratch_;
  BlockRef stage_;
  uint64_t grown_ = 0;
  bool scratchLogged_ = false;
  bool stageLogged_ = false;
};

}  // namespace weft::cuda
