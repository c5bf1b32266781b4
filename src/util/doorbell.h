// Spin-then-block waiting across threads and processes.
//
// A Doorbell is a 64-byte word pair that can live in shared memory. A waiter
// that finds nothing to do reads `seq`, re-checks its condition, and sleeps
// in futex(seq) until someone rings. Ringing is one atomic increment plus a
// futex wake only when somebody sleeps, so the fast path costs no syscall.
// Ranks often outnumber cores (8 processes on 2 cores): a short spin keeps
// latency low when the peer is running, the futex keeps a waiting rank from
// stealing the core its peer needs.
#pragma once

#include <atomic>
#include <cstdint>

namespace weft {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleepers{0};
};

// Wakes every waiter of bell.
void ring(Doorbell* bell);

// Sleeps until bell's seq differs from `seen` or timeoutNs passes (a spurious
// return is allowed; callers re-check their condition).
void sleepOn(Doorbell* bell, uint32_t seen, int64_t timeoutNs);

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

}  // namespace weft
