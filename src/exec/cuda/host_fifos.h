// What the device path needs for FIFOs that live in host memory (shm FIFOs,
// socket/ib staging slots): device-visible addresses for them, and a thread
// that rings their doorbells while kernels move data through them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "src/util/doorbell.h"

namespace weft::cuda {

// Device-visible addresses for host memory the kernel must read or write
// (shm FIFOs, socket/ib staging slots, the communicator's abort flag).
// Ranges are page-locked and mapped once (cudaHostRegister, portable and
// mapped) and reference counted process-wide, since several communicators
// of one process can share a FIFO (threads as ranks) or a page: a new range
// registers only its pages that no earlier registration covers.
class HostMapping {
 public:
  HostMapping() = default;
  HostMapping(const void* p, size_t bytes);  // throws weft::Error
  HostMapping(HostMapping&& o) noexcept { *this = static_cast<HostMapping&&>(o); }
  HostMapping& operator=(HostMapping&& o) noexcept;
  HostMapping(const HostMapping&) = delete;
  HostMapping& operator=(const HostMapping&) = delete;
  ~HostMapping();

  // The device address of host address p (inside the mapped range).
  void* device(const void* p) const;

 private:
  void release();
  char* base_ = nullptr;      // page-aligned start of the mapped range
  size_t bytes_ = 0;
  std::vector<char*> refs_;   // registry entries (registrations) this mapping holds a reference on
};

// Kernels cannot make futex calls, so they ring no doorbells when they post
// or free a slot. Host-side movers that sleep on a doorbell (the socket and
// ib proxy threads) would then only notice device progress at the end of
// their sleep slice. While a communicator has device work in flight, this
// thread rings the doorbells of the host-memory FIFOs that work uses, every
// few microseconds; ringing a bell nobody sleeps on is one atomic increment.
class BellRinger {
 public:
  BellRinger() = default;
  ~BellRinger();
  BellRinger(const BellRinger&) = delete;
  BellRinger& operator=(const BellRinger&) = delete;

  void add(Doorbell* bell);  // once per bell; null is ignored
  // Asked every ~1 ms while ringing (from the ringer's thread): whether the
  // communicator's eager launches are still running. Null: never busy.
  void setBusyCheck(std::function<bool()> busy);
  void workStarted();  // an eager launch was queued: ring until the check says idle
  void keepRinging();  // a launch was captured into a CUDA graph: its replays are invisible to the host
  void stop();         // joins the thread (before what the busy check uses goes away)

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Doorbell*> bells_;
  std::function<bool()> busy_;
  bool active_ = false;
  uint64_t launches_ = 0;
  bool always_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace weft::cuda
