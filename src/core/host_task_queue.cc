#include "src/core/host_task_queue.h"

#include <sched.h>

#include <algorithm>

#include "src/util/clock.h"
#include "src/util/error.h"

namespace weft {
namespace {

// The longest single sleep of any wait here: how late a sleeper notices a
// change nobody rang for.
constexpr int64_t kSleepSliceNs = 10 * 1000 * 1000;

bool validCapacity(uint64_t c) { return c >= 2 && (c & (c - 1)) == 0; }

}  // namespace

HostTaskQueue::HostTaskQueue(uint64_t capacity)
    : mask_(validCapacity(capacity) ? capacity - 1 : kDefaultCapacity - 1), slots_(new Slot[mask_ + 1]) {
  for (uint64_t i = 0; i <= mask_; i++) slots_[i].seq.store(i, std::memory_order_relaxed);
}

HostTaskQueue::~HostTaskQueue() {
  // Published tasks that never ran (the worker drains before it exits, so
  // only a queue without a worker has any).
  for (uint64_t t = head_;; t++) {
    Slot& s = slots_[t & mask_];
    if (s.seq.load(std::memory_order_acquire) != t + 1) break;
    s.destroy(s.task);
    s.seq.store(t + mask_ + 1, std::memory_order_relaxed);
  }
}

HostTaskQueue::Slot* HostTaskQueue::claim(uint64_t* ticket) {
  // The caller shares cores with the worker that would free a slot (host
  // streams serve ranks): a few polls, then sleep until woken.
  WaitKnobs knobs = waitKnobs();
  knobs.spins = std::min(knobs.spins, kSharedCoreSpins);
  knobs.yieldNs = 0;
  Backoff b(knobs);
  bool counted = false;
  uint64_t t = tail_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& s = slots_[t & mask_];
    const uint32_t seen = spaceBell_.seq.load(std::memory_order_acquire);
    const int64_t diff = int64_t(s.seq.load(std::memory_order_acquire) - t);
    if (diff == 0) {
      if (tail_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        inFlight_.fetch_add(1, std::memory_order_acq_rel);
        *ticket = t;
        return &s;
      }
      continue;  // t now holds the current tail
    }
    if (diff > 0) {  // another producer took ticket t
      t = tail_.load(std::memory_order_relaxed);
      continue;
    }
    // Full: slot t still holds ticket t - capacity, queued or running. The
    // worker frees it when that task ends (every task is bounded), and
    // rings once per half ring of tasks run (runOne), so a caller that
    // queues far ahead is woken once per half ring, not once per task.
    if (!counted) fullWaits_.fetch_add(1, std::memory_order_relaxed), counted = true;
    const WaitPhase ph = b.idle();
    if (ph == WaitPhase::Sleep) {
      sleepUnless(&spaceBell_, seen, kSleepSliceNs,
                  [&] { return int64_t(s.seq.load(std::memory_order_acquire) - t) >= 0; });
    } else {
      b.pause(ph, &spaceBell_, seen);
    }
    t = tail_.load(std::memory_order_relaxed);
  }
}

void HostTaskQueue::publish(Slot* s, uint64_t ticket, bool busyRank) {
  busyRank_.store(busyRank, std::memory_order_relaxed);
  s->seq.store(ticket + 1, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ringIfSleeping(&workBell_);
}

bool HostTaskQueue::runOne() {
  Slot& s = slots_[head_ & mask_];
  if (s.seq.load(std::memory_order_acquire) != head_ + 1) return false;
  const weftResult_t r = s.run(s.task);
  s.destroy(s.task);
  if (r != weftSuccess) {
    int expected = weftSuccess;
    error_.compare_exchange_strong(expected, r, std::memory_order_acq_rel);
  }
  s.seq.store(head_ + mask_ + 1, std::memory_order_release);
  head_++;
  const bool idle = inFlight_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // A caller waiting for a slot needs one freed, and freeing half the ring
  // before waking it lets it queue that half without sleeping again.
  if (idle || (head_ & (mask_ >> 1)) == 0) ringIfSleeping(&spaceBell_);
  // ring, not ringIfSleeping: waitIdleFor's sleeps (waitFor) do not re-check
  // their condition once counted as sleepers; a ring bumps the sequence they
  // compare against, so none is missed. Once per time the stream empties.
  if (idle) ring(&idleBell_);
  return true;
}

void HostTaskQueue::waitForWork(int64_t sliceNs) {
  const uint32_t seen = workBell_.seq.load(std::memory_order_acquire);
  Slot& s = slots_[head_ & mask_];
  sleepUnless(&workBell_, seen, sliceNs, [&] {
    return stop_.load(std::memory_order_acquire) || s.seq.load(std::memory_order_acquire) == head_ + 1;
  });
}

void HostTaskQueue::stop() {
  stop_.store(true, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ring(&workBell_);
}

bool HostTaskQueue::waitIdleFor(int64_t yieldNs, int64_t timeoutNs) {
  if (yieldNs > 0) {
    const int64_t until = nowNs() + yieldNs;
    while (inFlight() > 0 && nowNs() < until) sched_yield();
  }
  // Then sleep: the caller shares cores with the worker it waits for.
  WaitKnobs k;
  k.sleepSliceNs = kSleepSliceNs;
  const WaitResult w = waitFor(&idleBell_, k, timeoutNs, [&] { return inFlight() == 0; }, [] { return false; });
  return w == WaitResult::Ready;
}

}  // namespace weft
