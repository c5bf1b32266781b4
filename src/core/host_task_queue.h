// A host stream's queue of work: a ring of fixed-size slots that callers
// fill and one worker thread empties, in order. A task is a callable stored
// inside its slot (no allocation per task), and the hand-off between a
// caller and the worker is a few atomic operations: no lock, and a futex
// wake only when the other side sleeps (src/util/doorbell.h).
//
// Slots follow the bounded-queue scheme with a sequence number per slot:
// slot i starts at sequence i; a producer that claims ticket t (by
// compare-and-swap on the tail) owns slot t % capacity when its sequence is
// t, fills it and publishes t + 1; the worker runs the task of ticket h once
// the slot reads h + 1, in place, then hands the slot to ticket
// h + capacity. Several threads may queue on one stream; tickets order them.
//
// Waits: a caller finding the ring full waits for the worker to run a task;
// the worker waits for work; synchronize waits for the in-flight count to
// reach zero. All sleep in bounded slices. A caller's waits end because
// every queued task carries its own bound (the communicator's timeout) and
// the worker runs them one after another; waitIdleFor bounds the wait
// itself for callers that must give up.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "src/util/doorbell.h"
#include "weft/weft.h"

namespace weft {

class HostTaskQueue {
 public:
  // Room for the largest task queued today (one collective's OpDesc and a
  // communicator, or a group's shared batches); larger callables are a
  // compile error, not an allocation.
  static constexpr size_t kTaskBytes = 160;
  static constexpr uint64_t kDefaultCapacity = 256;

  // capacity: a power of two >= 2.
  explicit HostTaskQueue(uint64_t capacity = kDefaultCapacity);
  ~HostTaskQueue();  // destroys tasks never run (callers drain first)
  HostTaskQueue(const HostTaskQueue&) = delete;
  HostTaskQueue& operator=(const HostTaskQueue&) = delete;

  // Queues f (a callable returning weftResult_t). Waits while the ring is
  // full. `busyRank`: see HostStream::enqueue.
  template <class F>
  void push(F&& f, bool busyRank = false);

  // Worker side. Runs the oldest published task, if any: returns false
  // when there is none. The first failing task's result is kept (error()).
  bool runOne();
  // Sleeps until a task may be published or stopping() (at most sliceNs).
  void waitForWork(int64_t sliceNs);
  // Asks the worker to finish: it drains what is queued, then exits.
  void stop();
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  // Tasks queued and not yet finished (claimed slots included).
  int64_t inFlight() const { return inFlight_.load(std::memory_order_acquire); }
  bool lastFromBusyRank() const { return busyRank_.load(std::memory_order_relaxed); }
  weftResult_t error() const { return weftResult_t(error_.load(std::memory_order_acquire)); }
  // Waits until inFlight() is 0; yields first for up to yieldNs. Returns
  // false when timeoutNs > 0 passed first.
  bool waitIdleFor(int64_t yieldNs, int64_t timeoutNs);
  uint64_t capacity() const { return mask_ + 1; }
  // How often push found the ring full and waited (tests read it).
  uint64_t fullWaits() const { return fullWaits_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};
    weftResult_t (*run)(void*) = nullptr;
    void (*destroy)(void*) = nullptr;
    alignas(std::max_align_t) unsigned char task[kTaskBytes];
  };

  // Claims the slot of the next ticket, waiting while the ring is full.
  Slot* claim(uint64_t* ticket);
  void publish(Slot* s, uint64_t ticket, bool busyRank);

  const uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint64_t> tail_{0};  // next ticket to hand out
  alignas(64) uint64_t head_ = 0;               // next ticket to run (worker only)
  alignas(64) std::atomic<int64_t> inFlight_{0};
  std::atomic<bool> busyRank_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> error_{weftSuccess};
  std::atomic<uint64_t> fullWaits_{0};
  Doorbell workBell_;   // rung when a task is published or stop is asked
  Doorbell spaceBell_;  // rung when a slot is freed while the ring was full
  Doorbell idleBell_;   // rung when the in-flight count reaches zero
};

template <class F>
void HostTaskQueue::push(F&& f, bool busyRank) {
  using Task = std::decay_t<F>;
  static_assert(sizeof(Task) <= kTaskBytes, "a host stream task must fit its slot (HostTaskQueue::kTaskBytes)");
  static_assert(alignof(Task) <= alignof(std::max_align_t), "over-aligned host stream task");
  uint64_t ticket = 0;
  Slot* s = claim(&ticket);
  ::new (static_cast<void*>(s->task)) Task(std::forward<F>(f));
  s->run = [](void* p) -> weftResult_t { return (*static_cast<Task*>(p))(); };
  s->destroy = [](void* p) { static_cast<Task*>(p)->~Task(); };
  publish(s, ticket, busyRank);
}

}  // namespace weft
