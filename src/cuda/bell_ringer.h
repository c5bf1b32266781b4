// Kernels cannot make futex calls, so they ring no doorbells when they post
// or free a slot. Host-side movers that sleep on a doorbell (the socket and
// ib proxy threads) would then only notice device progress at the end of
// their sleep slice. While a communicator has device work in flight, this
// thread rings the doorbells of the host-memory FIFOs that work uses, every
// few microseconds; ringing a bell nobody sleeps on is one atomic increment.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "src/util/doorbell.h"

namespace weft::cuda {

class BellRinger {
 public:
  BellRinger() = default;
  ~BellRinger();
  BellRinger(const BellRinger&) = delete;
  BellRinger& operator=(const BellRinger&) = delete;

  void add(Doorbell* bell);  // once per bell; null is ignored
  void workStarted();        // a launch was queued
  void workEnded();          // its completion callback ran (callable from a CUDA callback)

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Doorbell*> bells_;
  int inflight_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace weft::cuda
