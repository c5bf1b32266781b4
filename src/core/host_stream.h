// Host streams: ordered queues of host-buffer work, each run by its own
// worker thread, so the caller can overlap compute with communication.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "weft/weft.h"

namespace weft {

class HostStream {
 public:
  HostStream();
  ~HostStream();  // finishes queued work first

  // Queues `task`; it runs after everything queued before it. A task returns
  // its result; the first failure is remembered and reported by
  // synchronize/query. `busyRank`: the task's communicator busy-polls
  // (weftComm::busyPoll), so its ranks have a core each and work queued here
  // finishes soon; synchronize then yields while it waits (below).
  void enqueue(std::function<weftResult_t()> task, bool busyRank = false);
  weftResult_t synchronize();
  weftResult_t query();

 private:
  void loop();

  std::mutex mutex_;
  // Two conditions, so that neither side is woken for the other's event:
  // the worker per enqueued task, a synchronizer only when all is done.
  std::condition_variable workCv_;
  std::condition_variable idleCv_;
  std::deque<std::function<weftResult_t()>> queue_;
  // Tasks queued or running, and whether the last one queued came from a
  // busy-polling rank: read without the lock by synchronize's first phase.
  std::atomic<int> pending_{0};
  std::atomic<bool> busyRank_{false};
  bool running_ = false;  // a task is executing
  bool stop_ = false;
  weftResult_t error_ = weftSuccess;
  std::thread worker_;
};

// Registry of live streams: weftStream_t is an opaque pointer that may also
// be a cudaStream_t, so a lookup tells the two apart.
HostStream* findHostStream(weftStream_t s);
weftStream_t registerHostStream(HostStream* s);
bool unregisterHostStream(weftStream_t s);

}  // namespace weft
