#include "src/core/host_stream.h"

#include <set>

namespace weft {

HostStream::HostStream() : worker_([this] { loop(); }) {}

HostStream::~HostStream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
  }
  workCv_.notify_all();
  worker_.join();
}

void HostStream::enqueue(std::function<weftResult_t()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  workCv_.notify_one();
}

void HostStream::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    workCv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    weftResult_t r = task();
    lock.lock();
    running_ = false;
    if (r != weftSuccess && error_ == weftSuccess) error_ = r;
    if (queue_.empty()) idleCv_.notify_all();
  }
}

// Each queued task carries its own bound (the communicator's timeout), so
// this wait ends.
weftResult_t HostStream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  idleCv_.wait(lock, [this] { return queue_.empty() && !running_; });
  return error_;
}

weftResult_t HostStream::query() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!queue_.empty() || running_) return error_ != weftSuccess ? error_ : weftInProgress;
  return error_;
}

namespace {
std::mutex registryMutex;
std::set<void*>& registry() {
  static std::set<void*> r;
  return r;
}
}  // namespace

HostStream* findHostStream(weftStream_t s) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().count(s) ? static_cast<HostStream*>(s) : nullptr;
}

weftStream_t registerHostStream(HostStream* s) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(s);
  return s;
}

bool unregisterHostStream(weftStream_t s) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().erase(s) > 0;
}

}  // namespace weft
