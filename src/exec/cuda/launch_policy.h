// Decisions of the device launch path that need no GPU to make, kept apart
// from the CUDA calls so they are unit-tested on machines without one:
// what a call may do while the user's stream is being captured into a CUDA
// graph, when several ranks on one GPU cannot progress, and the bookkeeping
// that frees device memory only once no owner (cached plan, current
// scratch, captured graph) can still read it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace weft::cuda {

// The user's stream as cudaStreamGetCaptureInfo reports it.
enum class CaptureState { None, Active, Invalidated };

// What a launch needs that only set-up outside capture can provide. Inside a
// capture nothing may be allocated, uploaded, registered or synchronised:
// each of these must already exist.
struct LaunchNeeds {
  bool stateReady = true;    // the communicator's device stream, status word, abort mapping
  bool planUploaded = true;  // the plan's device image (cached plans, or a group seen before)
  bool fifosMapped = true;   // every FIFO the plan uses has its device view
  bool scratchFits = true;   // scratch / staging buffers are already big enough
  bool tableFits = true;     // room in the plan-image arena for a large group's binding table
};

// Empty when the call may go ahead; otherwise what is missing and the
// warm-up that provides it (the caller reports weftInvalidUsage with it).
inline std::string captureRefusal(CaptureState s, const LaunchNeeds& n) {
  if (s == CaptureState::None) return {};
  if (s == CaptureState::Invalidated)
    return "the stream's capture was invalidated by an earlier error; end the capture and start it again";
  std::string missing;
  auto add = [&](bool ok, const char* what) {
    if (ok) return;
    if (!missing.empty()) missing += ", ";
    missing += what;
  };
  add(n.stateReady, "the communicator's device state");
  add(n.planUploaded, "the plan's device image (no room in WEFT_DEVICE_IMAGE_ARENA)");
  add(n.fifosMapped, "device views of its connections");
  add(n.scratchFits, "scratch of the needed size");
  add(n.tableFits, "room for the group's binding table (WEFT_DEVICE_IMAGE_ARENA)");
  if (missing.empty()) return {};
  std::string why = "a call inside CUDA graph capture would have to allocate or upload (" + missing +
                    "); make the same call (same collective, count, type and peers) once outside capture first "
                    "(the first call of each shape is the warm-up; see docs/cuda.md)";
  if (!n.fifosMapped) why += ", or call weftCommWarmup on every rank after init (it connects every call shape)";
  return why;
}

// Set-up actions of the device path, counted process-wide: device and
// pinned allocations, host registrations and FIFO mappings, copies from
// pageable memory (which wait for their stream). Each one can synchronise
// implicitly or is forbidden inside CUDA graph capture; after init and
// weftCommWarmup a call of a warmed shape makes none (the GPU tests assert
// it through this count).
inline std::atomic<uint64_t>& deviceSetupActions() {
  static std::atomic<uint64_t> n{0};
  return n;
}
inline void countDeviceSetup() { deviceSetupActions().fetch_add(1, std::memory_order_relaxed); }

// Several ranks of one GPU spin in kernels that wait for each other; the
// legacy default stream synchronises with every other blocking stream of the
// device, so one rank's kernel would never start behind its peer's.
inline bool legacyStreamCannotProgress(bool legacyStream, int ranksOnThisGpu) {
  return legacyStream && ranksOnThisGpu > 1;
}

// Device memory whose last owner let go: a cached plan's image evicted
// from the plan cache, scratch replaced by a bigger one, or the last CUDA
// graph that captured a launch using it destroyed. Owners let go from any
// thread, CUDA's user-object destructors included, where no CUDA call is
// allowed; so they only queue the memory here, and the communicator frees it
// later from its own thread (stream-ordered on its device stream, behind
// every eager launch that may still read it).
template <class Mem>
class ReleaseQueue {
 public:
  void push(Mem m) {
    std::lock_guard<std::mutex> l(mutex_);
    pending_.push_back(std::move(m));
  }
  // Hands every queued entry to release(mem); returns how many.
  template <class Release>
  size_t drain(Release release) {
    std::vector<Mem> now;
    {
      std::lock_guard<std::mutex> l(mutex_);
      now.swap(pending_);
    }
    for (Mem& m : now) release(m);
    return now.size();
  }
  size_t size() const {
    std::lock_guard<std::mutex> l(mutex_);
    return pending_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Mem> pending_;
};

// One block of device memory shared by its owners (shared_ptr<DeviceBlock>):
// the last one to let go queues the address for release.
struct DeviceBlock {
  DeviceBlock(void* p, size_t n, std::shared_ptr<ReleaseQueue<void*>> q) : ptr(p), bytes(n), queue(std::move(q)) {}
  ~DeviceBlock() {
    if (ptr && queue) queue->push(ptr);
  }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  void* ptr;
  size_t bytes;
  std::shared_ptr<ReleaseQueue<void*>> queue;
};
using BlockRef = std::shared_ptr<DeviceBlock>;

}  // namespace weft::cuda
