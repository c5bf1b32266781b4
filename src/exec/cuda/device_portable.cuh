// What the plan interpreter needs from the machine, for both compilers.
//
// Under nvcc these are the CUDA primitives (__syncthreads, volatile loads,
// __threadfence_system, %globaltimer). Compiled as plain C++ (the devemu
// tests, tests/devemu) each CTA's threads are CPU threads: a CTA barrier is
// a std::barrier over them, counters are C++ atomics (acquire loads, release
// stores, so ThreadSanitizer sees the same ordering the fences give on the
// GPU) and data is ordinary memory. The interpreter is written against this
// header only, so both builds run the same source.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define WEFT_DEV __device__ __forceinline__
#else
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>
#define WEFT_DEV inline
#endif

namespace weft::cuda {

#if defined(__CUDACC__)
using Vec16 = uint4;
#else
struct alignas(16) Vec16 {
  uint32_t x, y, z, w;
};
#endif

// Who is running: this thread's CTA and its index in it. On the GPU, from
// blockIdx/threadIdx; in the host emulation, set by the emulator.
struct CtaCtx {
  int cta;
  int nCtas;
  int tid;
  int nThreads;
#if !defined(__CUDACC__)
  std::barrier<>* barrier;  // the CTA's threads
#endif
};

#if defined(__CUDACC__)

WEFT_DEV void ctaSync(const CtaCtx&) { __syncthreads(); }
// Orders this thread's earlier writes (and, after ctaSync, the CTA's) before
// its later ones for every observer: peer GPUs, the host, a NIC.
WEFT_DEV void fenceSystem() { __threadfence_system(); }
WEFT_DEV uint32_t loadCounter(const uint32_t* p) { return *reinterpret_cast<const volatile uint32_t*>(p); }
WEFT_DEV void storeCounter(uint32_t* p, uint32_t v) { *reinterpret_cast<volatile uint32_t*>(p) = v; }
WEFT_DEV uint64_t loadSize(const uint64_t* p) { return *reinterpret_cast<const volatile uint64_t*>(p); }
WEFT_DEV void storeSize(uint64_t* p, uint64_t v) { *reinterpret_cast<volatile uint64_t*>(p) = v; }
WEFT_DEV uint8_t loadFlag(const volatile uint8_t* p) { return *p; }
WEFT_DEV void storeStatus(uint32_t* p, uint32_t v) { *reinterpret_cast<volatile uint32_t*>(p) = v; }
WEFT_DEV void storeStatus(int32_t* p, int32_t v) { *reinterpret_cast<volatile int32_t*>(p) = v; }
WEFT_DEV uint64_t nowNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
WEFT_DEV void pause(uint32_t spins) { __nanosleep(spins < 1024 ? 32 : 1000); }
// Slot data is rewritten by another agent while the kernel runs: never
// served from a cache.
WEFT_DEV Vec16 loadSlotVec(const Vec16* p) { return __ldcv(p); }
// LL lines: 8 bytes (data word, flag word) written and read as one access,
// so a reader that sees the flag sees the data of the same store.
WEFT_DEV uint64_t loadLine(const uint64_t* p) { return *reinterpret_cast<const volatile uint64_t*>(p); }
WEFT_DEV void storeLine(uint64_t* p, uint64_t v) { *reinterpret_cast<volatile uint64_t*>(p) = v; }
template <class S>
WEFT_DEV S loadSlot(const S* p) {
  return *reinterpret_cast<const volatile S*>(p);
}

#else  // host emulation

inline void ctaSync(const CtaCtx& c) { c.barrier->arrive_and_wait(); }
// Nothing to do: every counter access below is already an acquire load or
// a release store (and ThreadSanitizer does not model fences).
inline void fenceSystem() {}
inline uint32_t loadCounter(const uint32_t* p) {
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(p)).load(std::memory_order_acquire);
}
inline void storeCounter(uint32_t* p, uint32_t v) { std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release); }
inline uint64_t loadSize(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_relaxed);
}
inline void storeSize(uint64_t* p, uint64_t v) { std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_relaxed); }
inline uint8_t loadFlag(const volatile uint8_t* p) {
  return std::atomic_ref<uint8_t>(*const_cast<uint8_t*>(p)).load(std::memory_order_acquire);
}
inline void storeStatus(uint32_t* p, uint32_t v) { std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release); }
inline void storeStatus(int32_t* p, int32_t v) { std::atomic_ref<int32_t>(*p).store(v, std::memory_order_relaxed); }
inline uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
inline void pause(uint32_t) { std::this_thread::yield(); }
inline Vec16 loadSlotVec(const Vec16* p) { return *p; }
// Data and flag share the word, so the line itself needs no ordering. But
// a line's data is computed from loads the writer made before it (a tree's
// up pass reads the user buffer that its down pass, another CTA, rewrites
// once the parent's answer came back): on the GPU that order comes from the
// data dependency (no store is made before the loads it depends on
// returned), which relaxed C++ atomics do not express, so ThreadSanitizer
// would call it a race. Release/acquire models it. It also orders the
// writer's earlier stores, which the GPU does not without a fence: a plan
// whose channels read, through LL lines only, what another channel of the
// same rank wrote would pass here and fail on a GPU (none does; see "What
// it cannot catch" in docs/cuda.md).
inline uint64_t loadLine(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
}
inline void storeLine(uint64_t* p, uint64_t v) { std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release); }
template <class S>
inline S loadSlot(const S* p) {
  return *p;
}

#endif

}  // namespace weft::cuda
