#include "src/util/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

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

WaitKnobs waitKnobs() {
  WaitKnobs k;
  k.spins = spinCount();
  k.yieldNs = yieldWindowNs();
  k.sleepSliceNs = kWaitSleepSliceNs;
  return k;
}

WaitKnobs rankWaitKnobs(bool busy) {
  WaitKnobs k = waitKnobs();
  if (busy) k.busyNs = kBusyPollNs;
  else k.spins = std::min(k.spins, kSharedCoreSpins);
  return k;
}

std::optional<SpinMode> parseSpinMode(const std::string& text) {
  std::string t;
  for (char c : text) t += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  if (t == "auto") return SpinMode::Auto;
  if (t == "1" || t == "busy") return SpinMode::Busy;
  if (t == "0" || t == "yield") return SpinMode::Yield;
  return std::nullopt;
}

bool busyPolls(SpinMode mode, int ranksOnHost, int cpus) {
  switch (mode) {
    case SpinMode::Busy: return true;
    case SpinMode::Yield: return false;
    case SpinMode::Auto: break;
  }
  return ranksOnHost <= cpus;
}

}  // namespace weft
