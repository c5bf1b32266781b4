#include "src/cuda/bell_ringer.h"

#include <algorithm>
#include <chrono>

namespace weft::cuda {

BellRinger::~BellRinger() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BellRinger::add(Doorbell* bell) {
  if (!bell) return;
  std::lock_guard<std::mutex> l(mutex_);
  if (std::find(bells_.begin(), bells_.end(), bell) == bells_.end()) bells_.push_back(bell);
}

void BellRinger::workStarted() {
  std::lock_guard<std::mutex> l(mutex_);
  if (bells_.empty()) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  inflight_++;
  cv_.notify_all();
}

void BellRinger::workEnded() {
  std::lock_guard<std::mutex> l(mutex_);
  if (inflight_ > 0) inflight_--;
}

void BellRinger::loop() {
  std::unique_lock<std::mutex> l(mutex_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || inflight_ > 0; });
    if (stop_) return;
    std::vector<Doorbell*> bells = bells_;
    l.unlock();
    for (Doorbell* b : bells) ring(b);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    l.lock();
  }
}

}  // namespace weft::cuda
