// The shared progress thread: every task is polled, a failing task is told
// once and dropped while the others go on, and remove() means never again.
#include "transports/proxy_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace weft {
namespace {

struct CountingTask : ProxyTask {
  std::atomic<int> calls{0};
  std::atomic<int> work{0};  // units left to do: progress() takes one
  std::atomic<int> failures{0};
  int throwAt = -1;  // the call that throws
  bool progress() override {
    const int c = calls.fetch_add(1) + 1;
    if (c == throwAt) throw std::runtime_error("broken link");
    int w = work.load();
    while (w > 0 && !work.compare_exchange_weak(w, w - 1)) {
    }
    return w > 0;
  }
  void failed(const std::exception& e) noexcept override {
    EXPECT_STREQ(e.what(), "broken link");
    failures++;
  }
};

template <class F>
bool eventually(F done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(ProxyService, OneThreadProgressesEveryTask) {
  ProxyService service("test-proxy", 50 * 1000);
  CountingTask a, b;
  a.work = 1000;
  b.work = 1000;
  service.add(&a);
  service.add(&b);
  EXPECT_TRUE(eventually([&] { return a.work == 0 && b.work == 0; }));
  EXPECT_EQ(service.taskCount(), 2u);
  service.remove(&a);
  service.remove(&b);
}

TEST(ProxyService, FailingTaskIsToldOnceAndDroppedOthersGoOn) {
  ProxyService service("test-proxy", 50 * 1000);
  CountingTask bad, good;
  bad.throwAt = 3;
  service.add(&bad);
  service.add(&good);
  ASSERT_TRUE(eventually([&] { return bad.failures == 1; }));
  EXPECT_TRUE(eventually([&] { return service.taskCount() == 1; }));
  const int callsAfterFailure = bad.calls;
  good.work = 500;
  ring(service.bell());
  EXPECT_TRUE(eventually([&] { return good.work == 0; }));
  EXPECT_EQ(bad.calls, callsAfterFailure);
  EXPECT_EQ(bad.failures, 1);
  service.remove(&bad);  // already dropped: a no-op
  service.remove(&good);
}

TEST(ProxyService, RemovedTaskIsNeverCalledAgain) {
  ProxyService service("test-proxy", 10 * 1000);
  for (int round = 0; round < 50; round++) {
    CountingTask t;
    t.work = 1 << 30;  // always busy: the thread is inside progress() often
    service.add(&t);
    ASSERT_TRUE(eventually([&] { return t.calls > 10; }));
    service.remove(&t);
    const int after = t.calls;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_EQ(t.calls, after) << "round " << round;
  }  // t is destroyed right after remove(): a use after it would show here under ASan
}

TEST(ProxyService, RingWakesAnIdleService) {
  ProxyService service("test-proxy", 1000LL * 1000 * 1000);  // naps of up to 1 s
  CountingTask t;
  service.add(&t);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // idle: asleep by now
  const auto start = std::chrono::steady_clock::now();
  t.work = 1;
  ring(service.bell());
  ASSERT_TRUE(eventually([&] { return t.work == 0; }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  service.remove(&t);
}

// A task that waits on a pipe: progress() drains it, idleWait() names it.
struct PipeTask : ProxyTask {
  int fds[2] = {-1, -1};
  std::atomic<int> bytes{0};
  std::atomic<int> work{0};
  PipeTask() { EXPECT_EQ(pipe2(fds, O_NONBLOCK), 0); }
  ~PipeTask() override {
    close(fds[0]);
    close(fds[1]);
  }
  bool progress() override {
    char buf[64];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) bytes += static_cast<int>(n);
    int w = work.exchange(0);
    return n > 0 || w > 0;
  }
  void failed(const std::exception&) noexcept override {}
  int64_t idleWait(std::vector<pollfd>* out) override {
    out->push_back(pollfd{fds[0], POLLIN, 0});
    return -1;
  }
};

// Asleep in poll() on a task's descriptor (naps of up to 10 s): data on it
// and a ring of the bell (through the eventfd) each end the nap at once.
TEST(ProxyService, SocketReadinessAndRingsWakeAPollingService) {
  ProxyService service("test-proxy", 10LL * 1000 * 1000 * 1000, /*spin=*/false);
  PipeTask t;
  service.add(&t);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // idle: in poll() by now
    auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(write(t.fds[1], "x", 1), 1);
    ASSERT_TRUE(eventually([&] { return t.bytes == round + 1; }));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "data did not wake it";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    start = std::chrono::steady_clock::now();
    t.work = 1;
    ring(service.bell());
    ASSERT_TRUE(eventually([&] { return t.work == 0; }));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "a ring did not wake it";
  }
  service.remove(&t);
}

}  // namespace
}  // namespace weft
