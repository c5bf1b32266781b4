#include "src/util/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "src/util/settings.h"

namespace weft {

// Not FUTEX_PRIVATE: doorbells may live in memory shared between processes.
static long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const struct timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, ts, nullptr, 0);
}

void ring(Doorbell* bell) {
  bell->seq.fetch_add(1, std::memory_order_seq_cst);
  if (bell->sleepers.load(std::memory_order_seq_cst) == 0) return;
  futex(&bell->seq, FUTEX_WAKE, INT32_MAX, nullptr);
  if (const int32_t fd = bell->wakeFdPlus1.load(std::memory_order_seq_cst); fd != 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(fd - 1, &one, sizeof one);  // full only if never read: then awake anyway
  }
}

void sleepOn(Doorbell* bell, uint32_t seen, int64_t timeoutNs) {
  if (timeoutNs <= 0) return;
  struct timespec ts;
  ts.tv_sec = timeoutNs / 1000000000;
  ts.tv_nsec = timeoutNs % 1000000000;
  bell->sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (bell->seq.load(std::memory_order_seq_cst) == seen) futex(&bell->seq, FUTEX_WAIT, seen, &ts);
  bell->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

int spinCount() {
  static const int n = static_cast<int>(settings::get(settings::kSpinCount));
  return n;
}

int64_t yieldWindowNs() {
  static const int64_t ns = settings::get(settings::kYieldUs) * 1000;
  return ns;
}

WaitKnobs waitKnobs(bool ownCore) {
  WaitKnobs k;
  k.spins = spinCount();
  k.yieldNs = yieldWindowNs();
  k.spinAloneNs = ownCore ? kSpinAloneNs : 0;
  k.sleepSliceNs = kWaitSleepSliceNs;
  return k;
}

}  // namespace weft
