// Spin-then-block waiting across threads and processes.
//
// A Doorbell is a 64-byte word pair that can live in shared memory. A waiter
// that finds nothing to do reads `seq`, re-checks its condition, and sleeps
// in futex(seq) until someone rings. Ringing is one atomic increment plus a
// futex wake only when somebody sleeps, so the fast path costs no syscall.
// Ranks often outnumber cores (8 processes on 2 cores): a short spin keeps
// latency low when the peer is running, the futex keeps a waiting rank from
// stealing the core its peer needs.
//
// Every waiter in weft (the host executor, the socket and IB proxy threads)
// backs off the same way, through Backoff: spin WEFT_SPIN_COUNT polls, then
// yield the core for up to WEFT_YIELD_US, then sleep on the doorbell in
// bounded slices.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "src/util/clock.h"

namespace weft {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleepers{0};
  // An eventfd plus one (0: none) that ring() also writes while somebody
  // sleeps, so a waiter can sleep in poll() on sockets and this bell at
  // once (the shared proxy of the socket transport). Only for a bell that
  // stays inside one process: a descriptor means nothing in another.
  std::atomic<int32_t> wakeFdPlus1{0};
};

// Wakes every waiter of bell.
void ring(Doorbell* bell);

// Sleeps until bell's seq differs from `seen` or timeoutNs passes (a spurious
// return is allowed; callers re-check their condition).
void sleepOn(Doorbell* bell, uint32_t seen, int64_t timeoutNs);

// Sleeps as sleepOn does, unless ready() holds once this waiter counts
// among bell's sleepers. A writer that makes ready() true and then calls
// ringIfSleeping (after a seq_cst fence) cannot miss such a sleeper: one of
// the two sees the other's store. Lets a writer skip the ring, an atomic
// add on a shared line, while nobody sleeps.
template <class Ready>
void sleepUnless(Doorbell* bell, uint32_t seen, int64_t timeoutNs, Ready ready) {
  bell->sleepers.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!ready()) sleepOn(bell, seen, timeoutNs);
  bell->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

// Rings bell if a waiter sleeps on it (call after a seq_cst fence that
// follows the store the waiter waits for).
inline void ringIfSleeping(Doorbell* bell) {
  if (bell->sleepers.load(std::memory_order_relaxed) != 0) ring(bell);
}

// Iterations of the spin phase (WEFT_SPIN_COUNT), then how long a waiter
// keeps yielding its core before it sleeps (WEFT_YIELD_US).
int spinCount();
int64_t yieldWindowNs();

// A pause instruction for spin loops.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How a waiter backs off. The spin count and yield window are the same for
// every waiter; a waiter changes a field only where its situation differs,
// and says why where it does.
struct WaitKnobs {
  int spins = 0;         // polls with a pause instruction before yielding
  int64_t yieldNs = 0;   // then how long (from the start of the wait) to yield before sleeping
  // Busy-poll: for this long from the start of a wait, poll back to back
  // (no pause instruction, the clock read once per kBusyClockPolls polls)
  // before the spin/yield/sleep steps; 0: none. For a rank with a core of
  // its own: a running peer answers within that; a longer wait means other
  // load holds the peer off its core, and polling on would keep it off.
  int64_t busyNs = 0;
  // The longest single sleep: bounds how late a waiter notices what nobody
  // rings for (abort, a timeout, a halt flag).
  int64_t sleepSliceNs = 0;
};

inline constexpr int64_t kBusyPollNs = 50 * 1000;
inline constexpr int kBusyClockPolls = 64;
inline constexpr int64_t kWaitSleepSliceNs = 50 * 1000 * 1000;
// Polls before a rank that shares its core yields: the peer it waits for
// runs only once this rank gives the core up, so a few polls catch a peer on
// another core and no more.
inline constexpr int kSharedCoreSpins = 4;

// WEFT_SPIN_COUNT, WEFT_YIELD_US, 50 ms sleep slices, no busy-poll: the
// proxy threads' waiting (threads beside the ranks never own a core).
WaitKnobs waitKnobs();

// A rank's own waits (the host executor, the ll protocol, registered
// buffers): busy-poll for kBusyPollNs when `busy` (see busyPolls), else
// yield after kSharedCoreSpins polls (or WEFT_SPIN_COUNT if smaller); then
// as waitKnobs().
WaitKnobs rankWaitKnobs(bool busy);

// WEFT_SPIN: busy-poll always (Busy), never (Yield), or when the host's
// ranks have a core each (Auto).
enum class SpinMode { Auto, Busy, Yield };
// "auto", "1"/"busy", "0"/"yield" (case-insensitive); nullopt otherwise.
std::optional<SpinMode> parseSpinMode(const std::string& text);
// Whether a rank busy-polls: as `mode` says, and for Auto when the ranks on
// this host are no more than the CPUs this process may run on.
bool busyPolls(SpinMode mode, int ranksOnHost, int cpus);

enum class WaitPhase { Spin, Yield, Sleep };

// The state of one wait, kept inside the waiter's own poll loop so a poll
// costs no call through a function object:
//   for (;;) { seen = bell->seq; if (poll()) { b.reset(); continue; }
//              WaitPhase ph = b.idle(); [checks unless Spin]; b.pause(ph, bell, seen); }
class Backoff {
 public:
  explicit Backoff(const WaitKnobs& k) : k_(k) {}

  // The last poll moved something: the next idle poll starts a new wait.
  void reset() {
    idle_ = 0;
    busy_ = k_.busyNs > 0;
  }

  // Counts one poll that found nothing to do; returns the phase the wait is
  // in now. Callers check abort, failures and timeouts outside Spin.
  WaitPhase idle() {
    if (busy_ && busyIdle()) return WaitPhase::Spin;
    if (idle_ == 0) idleSince_ = nowNs();
    if (++idle_ < k_.spins) return WaitPhase::Spin;
    waited_ = nowNs() - idleSince_;
    return waited_ < k_.yieldNs ? WaitPhase::Yield : WaitPhase::Sleep;
  }

  // Backs off once as `phase` says; `seen` is bell's seq read before the
  // poll, so a ring after that poll ends the sleep at once.
  void pause(WaitPhase phase, Doorbell* bell, uint32_t seen) const {
    switch (phase) {
      case WaitPhase::Spin:
        // Busy-polling needs no pause: the core is this rank's, and a pause
        // loop in a virtual machine makes the hypervisor take the CPU away.
        if (!busy_) cpuRelax();
        return;
      case WaitPhase::Yield: sched_yield(); return;
      case WaitPhase::Sleep: sleepOn(bell, seen, k_.sleepSliceNs); return;
    }
  }

  // When the current wait began (the last poll that moved something).
  int64_t idleSinceNs() const { return idleSince_; }

 private:
  // One idle poll of the busy-poll window: true while the window lasts. The
  // clock starts at the first poll and is read again once per
  // kBusyClockPolls polls, so a short wait costs no clock read past the first.
  bool busyIdle() {
    if (idle_++ == 0) {
      idleSince_ = nowNs();
      return true;
    }
    if (idle_ % kBusyClockPolls != 0 || nowNs() - idleSince_ < k_.busyNs) return true;
    busy_ = false;  // the spin/yield/sleep steps follow, timed from the same start
    return false;
  }

  WaitKnobs k_;
  int idle_ = 0;
  bool busy_ = k_.busyNs > 0;
  int64_t idleSince_ = 0;
  int64_t waited_ = 0;
};

enum class WaitResult { Ready, GaveUp, TimedOut };

// Waits on bell until ready() holds; gaveUp() (a halt or abort flag) and a
// timeoutNs > 0 (from the call) end the wait early. Both are checked only
// after the spin phase, so a short wait costs ready() alone.
template <class Ready, class GiveUp>
WaitResult waitFor(Doorbell* bell, const WaitKnobs& k, int64_t timeoutNs, Ready ready, GiveUp gaveUp) {
  Backoff b(k);
  const int64_t start = timeoutNs > 0 ? nowNs() : 0;
  for (;;) {
    const uint32_t seen = bell->seq.load(std::memory_order_acquire);
    if (ready()) return WaitResult::Ready;
    const WaitPhase phase = b.idle();
    if (phase != WaitPhase::Spin) {
      if (gaveUp()) return WaitResult::GaveUp;
      if (timeoutNs > 0) {
        const int64_t left = start + timeoutNs - nowNs();
        if (left <= 0) return WaitResult::TimedOut;
        if (phase == WaitPhase::Sleep && left < k.sleepSliceNs) {
          sleepOn(bell, seen, left);
          continue;
        }
      }
    }
    b.pause(phase, bell, seen);
  }
}

}  // namespace weft
