// The host stream's task queue (src/core/host_task_queue.h): order per
// producer, the first error kept, no allocation per task, and waits that
// end (a full ring, an idle wait with a bound, a stream's synchronize).
#include "src/core/host_task_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "src/core/host_stream.h"

namespace {

std::atomic<long> allocations{0};

}  // namespace

// Counts every allocation of this test binary.
void* operator new(size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A worker thread draining q until stopped, as HostStream runs one.
class Worker {
 public:
  explicit Worker(HostTaskQueue* q) : q_(q), t_([this] { loop(); }) {}
  ~Worker() {
    q_->stop();
    t_.join();
  }

 private:
  void loop() {
    for (;;) {
      if (q_->runOne()) continue;
      if (q_->stopping()) {
        while (q_->runOne()) {
        }
        return;
      }
      q_->waitForWork(1000 * 1000);
    }
  }
  HostTaskQueue* q_;
  std::thread t_;
};

TEST(HostTaskQueue, RunsEachProducersTasksInOrderThroughASmallRing) {
  constexpr int kProducers = 4, kTasks = 20000;
  HostTaskQueue q(8);  // full most of the time: producers wait for slots
  std::vector<std::vector<int>> seen(kProducers);
  for (auto& v : seen) v.reserve(kTasks);
  {
    Worker w(&q);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; p++)
      producers.emplace_back([&, p] {
        for (int i = 0; i < kTasks; i++)
          q.push([&seen, p, i] {
            seen[size_t(p)].push_back(i);
            return weftSuccess;
          });
      });
    for (auto& t : producers) t.join();
    ASSERT_TRUE(q.waitIdleFor(0, 60LL * 1000 * 1000 * 1000));
  }
  for (int p = 0; p < kProducers; p++) {
    ASSERT_EQ(seen[size_t(p)].size(), size_t(kTasks)) << "producer " << p;
    for (int i = 0; i < kTasks; i++) ASSERT_EQ(seen[size_t(p)][size_t(i)], i) << "producer " << p;
  }
  EXPECT_EQ(q.inFlight(), 0);
  EXPECT_GT(q.fullWaits(), 0u);  // the ring did fill: the full-ring wait ran and ended
  EXPECT_EQ(q.error(), weftSuccess);
}

TEST(HostTaskQueue, QueuingAllocatesNothing) {
  HostTaskQueue q(64);
  Worker w(&q);
  std::atomic<long> ran{0};
  struct Payload {  // about the size of a queued collective (an OpDesc and a communicator)
    char bytes[120];
  } payload{};
  auto task = [&ran, payload] {
    ran.fetch_add(payload.bytes[0] + 1, std::memory_order_relaxed);
    return weftSuccess;
  };
  q.push(task);
  ASSERT_TRUE(q.waitIdleFor(0, 10LL * 1000 * 1000 * 1000));
  const long before = allocations.load();
  for (int i = 0; i < 5000; i++) q.push(task);
  ASSERT_TRUE(q.waitIdleFor(0, 60LL * 1000 * 1000 * 1000));
  EXPECT_EQ(allocations.load() - before, 0);
  EXPECT_EQ(ran.load(), 5001);
}

TEST(HostTaskQueue, KeepsTheFirstFailure) {
  HostTaskQueue q(4);
  Worker w(&q);
  int after = 0;
  q.push([] { return weftSuccess; });
  q.push([] { return weftRemoteError; });
  q.push([] { return weftTimeout; });
  q.push([&after] {
    after++;
    return weftSuccess;
  });
  ASSERT_TRUE(q.waitIdleFor(0, 10LL * 1000 * 1000 * 1000));
  EXPECT_EQ(q.error(), weftRemoteError);
  EXPECT_EQ(after, 1);  // a failure does not stop the tasks queued after it
}

TEST(HostTaskQueue, IdleWaitGivesUpAtItsBoundAndFullRingWaitEndsWithTheTask) {
  HostTaskQueue q(2);
  Worker w(&q);
  std::atomic<bool> release{false};
  auto blocked = [&release] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return weftSuccess;
  };
  q.push(blocked);
  q.push([] { return weftSuccess; });  // the ring of 2 is full now
  const auto t0 = Clock::now();
  EXPECT_FALSE(q.waitIdleFor(0, 50LL * 1000 * 1000));
  const double waited = secondsSince(t0);
  EXPECT_GE(waited, 0.045);
  EXPECT_LT(waited, 5.0);
  EXPECT_GT(q.inFlight(), 0);

  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    release.store(true);
  });
  const auto t1 = Clock::now();
  q.push([] { return weftSuccess; });  // full: returns once the blocked task has ended
  EXPECT_TRUE(release.load());
  EXPECT_LT(secondsSince(t1), 5.0);
  late.join();
  EXPECT_TRUE(q.waitIdleFor(0, 10LL * 1000 * 1000 * 1000));
  EXPECT_EQ(q.inFlight(), 0);
}

TEST(HostTaskQueue, DestroysTasksThatNeverRan) {
  auto token = std::make_shared<int>(7);
  {
    HostTaskQueue q(4);  // no worker
    q.push([token] { return weftSuccess; });
    q.push([token] { return weftSuccess; });
    EXPECT_EQ(token.use_count(), 3);
    EXPECT_EQ(q.inFlight(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST(HostTaskQueue, StreamReportsProgressAndTheFirstError) {
  HostStream s;
  std::atomic<bool> release{false};
  s.enqueue([&release] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return weftSuccess;
  });
  s.enqueue([] { return weftInvalidUsage; });
  EXPECT_EQ(s.query(), weftInProgress);
  release.store(true);
  EXPECT_EQ(s.synchronize(), weftInvalidUsage);
  EXPECT_EQ(s.query(), weftInvalidUsage);
}

}  // namespace
}  // namespace weft
