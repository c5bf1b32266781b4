#include "src/core/host_stream.h"

#include <sched.h>

#include <set>

#include "src/util/clock.h"

namespace weft {
namespace {
// How long a caller waiting in synchronize, or a worker waiting for work,
// yields before it sleeps, for work from busy-polling ranks.
constexpr int64_t kBusyRankYieldNs = 100 * 1000;
}  // namespace

HostStream::HostStream() : worker_([this] { loop(); }) {}

HostStream::~HostStream() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
  }
  workCv_.notify_all();
  worker_.join();
}

void HostStream::enqueue(std::function<weftResult_t()> task, bool busyRank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    pending_.fetch_add(1, std::memory_order_relaxed);
    busyRank_.store(busyRank, std::memory_order_relaxed);
  }
  workCv_.notify_one();
}

void HostStream::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty() && !stop_ && busyRank_.load(std::memory_order_relaxed)) {
      // Busy-polling ranks: the next call often follows within microseconds;
      // yielding for a while picks it up without a futex wake-up.
      lock.unlock();
      const int64_t until = nowNs() + kBusyRankYieldNs;
      while (pending_.load(std::memory_order_acquire) == 0 && nowNs() < until) sched_yield();
      lock.lock();
    }
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
    pending_.fetch_sub(1, std::memory_order_release);
    if (queue_.empty()) idleCv_.notify_all();
  }
}

// Each queued task carries its own bound (the communicator's timeout), so
// this wait ends.
//
// Work from busy-polling ranks (a core each) often ends within
// microseconds: the caller first yields for up to kBusyRankYieldNs, so it runs
// again as soon as the worker is done (the worker's core is free then)
// instead of after a futex wake-up, which costs more than a small
// collective on a virtual machine. Work from ranks that share cores skips
// that: a yielding caller would take turns from the ranks themselves.
weftResult_t HostStream::synchronize() {
  if (busyRank_.load(std::memory_order_relaxed)) {
    const int64_t until = nowNs() + kBusyRankYieldNs;
    while (pending_.load(std::memory_order_acquire) > 0 && nowNs() < until) sched_yield();
  }
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
// Changes with every register and unregister (under registryMutex), so a
// thread's last answer stays valid while it is unchanged.
std::atomic<uint64_t> registryVersion{1};

struct LastFound {
  weftStream_t stream = nullptr;
  uint64_t version = 0;
};
thread_local LastFound lastFound;
}  // namespace

// Every call on a host stream looks it up (validation, then submit): the
// thread's last hit answers without the lock while no stream was created
// or destroyed since.
HostStream* findHostStream(weftStream_t s) {
  if (s && s == lastFound.stream && lastFound.version == registryVersion.load(std::memory_order_acquire))
    return static_cast<HostStream*>(s);
  std::lock_guard<std::mutex> lock(registryMutex);
  if (!registry().count(s)) return nullptr;
  lastFound = {s, registryVersion.load(std::memory_order_relaxed)};
  return static_cast<HostStream*>(s);
}

weftStream_t registerHostStream(HostStream* s) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(s);
  registryVersion.fetch_add(1, std::memory_order_release);
  return s;
}

bool unregisterHostStream(weftStream_t s) {
  std::lock_guard<std::mutex> lock(registryMutex);
  const bool erased = registry().erase(s) > 0;
  registryVersion.fetch_add(1, std::memory_order_release);
  return erased;
}

}  // namespace weft
