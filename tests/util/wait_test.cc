// The one wait helper every waiter uses (Backoff, waitFor): its phases, and
// that a waiter wakes when rung, stops at its time bound and gives up when
// told to, each on its own, without a communicator around it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "src/util/clock.h"
#include "src/util/doorbell.h"

namespace weft {
namespace {

constexpr int64_t kMs = 1000 * 1000;

// Straight to sleep, in slices far longer than any test: only a ring (or
// the bound being tested) can end a sleep in time.
WaitKnobs sleepAtOnce() {
  WaitKnobs k;
  k.sleepSliceNs = 10 * 1000 * kMs;
  return k;
}

TEST(Wait, KnobsOfRanksAndProxies) {
  const WaitKnobs proxy = waitKnobs(), busy = rankWaitKnobs(true), shared = rankWaitKnobs(false);
  EXPECT_EQ(proxy.spins, spinCount());
  EXPECT_EQ(proxy.yieldNs, yieldWindowNs());
  EXPECT_EQ(proxy.busyNs, 0) << "threads beside the ranks never busy-poll";
  EXPECT_EQ(proxy.sleepSliceNs, kWaitSleepSliceNs);
  EXPECT_EQ(busy.busyNs, kBusyPollNs);
  EXPECT_EQ(busy.yieldNs, yieldWindowNs());
  EXPECT_EQ(shared.busyNs, 0);
  EXPECT_EQ(shared.spins, std::min(spinCount(), kSharedCoreSpins)) << "a rank sharing its core yields soon";
  EXPECT_EQ(shared.yieldNs, yieldWindowNs());
}

TEST(Wait, SpinModeSetting) {
  EXPECT_EQ(parseSpinMode("auto"), SpinMode::Auto);
  EXPECT_EQ(parseSpinMode("AUTO"), SpinMode::Auto);
  EXPECT_EQ(parseSpinMode("1"), SpinMode::Busy);
  EXPECT_EQ(parseSpinMode("busy"), SpinMode::Busy);
  EXPECT_EQ(parseSpinMode("0"), SpinMode::Yield);
  EXPECT_EQ(parseSpinMode("Yield"), SpinMode::Yield);
  EXPECT_EQ(parseSpinMode(""), std::nullopt);
  EXPECT_EQ(parseSpinMode("2"), std::nullopt);
  EXPECT_EQ(parseSpinMode("spin"), std::nullopt);
}

TEST(Wait, AutomaticBusyPollWhenRanksHaveACoreEach) {
  EXPECT_TRUE(busyPolls(SpinMode::Auto, 2, 2));
  EXPECT_TRUE(busyPolls(SpinMode::Auto, 1, 2));
  EXPECT_TRUE(busyPolls(SpinMode::Auto, 8, 64));
  EXPECT_FALSE(busyPolls(SpinMode::Auto, 4, 2));
  EXPECT_FALSE(busyPolls(SpinMode::Auto, 3, 2));
  EXPECT_FALSE(busyPolls(SpinMode::Auto, 2, 1));
  EXPECT_TRUE(busyPolls(SpinMode::Busy, 8, 2)) << "WEFT_SPIN=1 busy-polls even oversubscribed";
  EXPECT_FALSE(busyPolls(SpinMode::Yield, 2, 2)) << "WEFT_SPIN=0 never busy-polls";
}

// The busy window: back-to-back polls (Spin) for busyNs, then yield, then
// sleep, all timed from the wait's first poll; progress starts it again.
TEST(Wait, BusyPollThenYieldsThenSleeps) {
  WaitKnobs k;
  k.busyNs = 50 * kMs;
  k.yieldNs = 150 * kMs;
  Backoff b(k);
  const int64_t before = nowNs();
  // Polls well inside the window are all Spin (a preempted test stops early
  // rather than fail: only polls within half the window count).
  for (int i = 0; i < 10 * kBusyClockPolls && nowNs() - before < k.busyNs / 2; i++)
    ASSERT_EQ(b.idle(), WaitPhase::Spin) << "poll " << i;
  EXPECT_GE(b.idleSinceNs(), before);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  WaitPhase ph = WaitPhase::Spin;
  for (int i = 0; i < kBusyClockPolls && ph == WaitPhase::Spin; i++) ph = b.idle();
  EXPECT_EQ(ph, WaitPhase::Yield) << "the window ends at the next clock read";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(b.idle(), WaitPhase::Sleep);
  b.reset();
  EXPECT_EQ(b.idle(), WaitPhase::Spin);
  EXPECT_GE(b.idleSinceNs(), before + 160 * kMs);
}

TEST(Wait, BackoffSpinsThenYieldsThenSleeps) {
  WaitKnobs k;
  k.spins = 3;
  k.yieldNs = 20 * kMs;
  Backoff b(k);
  const int64_t before = nowNs();
  EXPECT_EQ(b.idle(), WaitPhase::Spin);
  EXPECT_GE(b.idleSinceNs(), before);
  EXPECT_EQ(b.idle(), WaitPhase::Spin);
  EXPECT_EQ(b.idle(), WaitPhase::Yield);
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(b.idle(), WaitPhase::Sleep);
  b.reset();  // progress: the next idle poll starts a new wait
  EXPECT_EQ(b.idle(), WaitPhase::Spin);
  EXPECT_GE(b.idleSinceNs(), before + 25 * kMs);
}

TEST(Wait, WakesWhenRung) {
  Doorbell bell;
  std::atomic<bool> ready{false};
  std::thread ringer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ready.store(true);
    ring(&bell);
  });
  const int64_t start = nowNs();
  const WaitResult r = waitFor(&bell, sleepAtOnce(), 0, [&] { return ready.load(); }, [] { return false; });
  const int64_t took = nowNs() - start;
  ringer.join();
  EXPECT_EQ(r, WaitResult::Ready);
  EXPECT_LT(took, 2000 * kMs) << "woke by its slice, not by the ring";
}

TEST(Wait, ReadyAtOnceCostsNoWait) {
  Doorbell bell;
  EXPECT_EQ(waitFor(&bell, sleepAtOnce(), 0, [] { return true; }, [] { return true; }), WaitResult::Ready);
}

TEST(Wait, TimesOutAtItsBound) {
  Doorbell bell;
  for (const bool spinFirst : {false, true}) {
    WaitKnobs k = sleepAtOnce();
    if (spinFirst) {  // the bound holds through every phase
      k.spins = 100;
      k.yieldNs = 5 * kMs;
    }
    const int64_t start = nowNs();
    const WaitResult r = waitFor(&bell, k, 30 * kMs, [] { return false; }, [] { return false; });
    const int64_t took = nowNs() - start;
    EXPECT_EQ(r, WaitResult::TimedOut);
    EXPECT_GE(took, 30 * kMs);
    EXPECT_LT(took, 2000 * kMs) << "slept past its bound";
  }
}

TEST(Wait, GivesUpOnAbort) {
  Doorbell bell;
  std::atomic<bool> abort{false};
  // Rung after the flag is set: the waiter leaves at once.
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    abort.store(true);
    ring(&bell);
  });
  int64_t start = nowNs();
  WaitResult r = waitFor(&bell, sleepAtOnce(), 0, [] { return false; }, [&] { return abort.load(); });
  aborter.join();
  EXPECT_EQ(r, WaitResult::GaveUp);
  EXPECT_LT(nowNs() - start, 2000 * kMs);

  // Nobody rings: the sleep slice bounds how late the flag is noticed.
  abort.store(false);
  WaitKnobs k;
  k.sleepSliceNs = 5 * kMs;
  std::thread silent([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    abort.store(true);
  });
  start = nowNs();
  r = waitFor(&bell, k, 0, [] { return false; }, [&] { return abort.load(); });
  silent.join();
  EXPECT_EQ(r, WaitResult::GaveUp);
  EXPECT_LT(nowNs() - start, 2000 * kMs);
}

}  // namespace
}  // namespace weft
