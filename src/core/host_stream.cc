#include "src/core/host_stream.h"

#include <sched.h>

#include <mutex>
#include <set>

#include "src/util/clock.h"

namespace weft {
namespace {
// How long a caller waiting in synchronize, or a worker waiting for work,
// yields before it sleeps, for work from busy-polling ranks.
constexpr int64_t kBusyRankYieldNs = 100 * 1000;
// The longest sleep of an idle worker: it re-checks for work and for stop.
constexpr int64_t kWorkerSleepSliceNs = 50 * 1000 * 1000;
}  // namespace

HostStream::HostStream() : worker_([this] { loop(); }) {}

HostStream::~HostStream() {
  queue_.stop();
  worker_.join();
}

void HostStream::loop() {
  for (;;) {
    if (queue_.runOne()) continue;
    if (queue_.stopping()) {
      // Stop was asked after the caller's last enqueue: what is queued
      // now is all there will be.
      while (queue_.runOne()) {
      }
      return;
    }
    if (queue_.lastFromBusyRank()) {
      // Busy-polling ranks: the next call often follows within microseconds;
      // yielding for a while picks it up without a futex wake-up.
      const int64_t until = nowNs() + kBusyRankYieldNs;
      while (queue_.inFlight() == 0 && !queue_.stopping() && nowNs() < until) sched_yield();
      if (queue_.inFlight() != 0) continue;
    }
    queue_.waitForWork(kWorkerSleepSliceNs);
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
  queue_.waitIdleFor(queue_.lastFromBusyRank() ? kBusyRankYieldNs : 0, 0);
  return queue_.error();
}

weftResult_t HostStream::query() {
  const weftResult_t e = queue_.error();
  if (queue_.inFlight() > 0) return e != weftSuccess ? e : weftInProgress;
  return e;
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
