// The thread that runs a process group's operations, one at a time, in the
// order they were issued. Every rank issues the same operations in the same
// order, so one ordered queue per group keeps ranks matched, and the caller
// returns at once with a Work to wait on.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace weft::torch_backend {

class OpQueue {
 public:
  OpQueue();
  ~OpQueue();  // runs what is queued, then stops
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  // `op` must not throw: it reports its own outcome (to its Work).
  void push(std::function<void()> op);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> ops_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weft::torch_backend
