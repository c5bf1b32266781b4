// Host streams: ordered queues of host-buffer work, each run by its own
// worker thread, so the caller can overlap compute with communication. The
// queue is a ring of task slots (src/core/host_task_queue.h): queuing a call
// allocates nothing and takes no lock.
#pragma once

#include <thread>
#include <utility>

#include "src/core/host_task_queue.h"
#include "weft/weft.h"

namespace weft {

class HostStream {
 public:
  HostStream();
  ~HostStream();  // finishes queued work first

  // Queues `task` (a callable returning weftResult_t, stored in the queue's
  // slot); it runs after everything queued before it. The first failure is
  // remembered and reported by synchronize/query. `busyRank`: the task's
  // communicator busy-polls (weftComm::busyPoll), so its ranks have a core
  // each and work queued here finishes soon; synchronize then yields while
  // it waits (host_stream.cc).
  template <class F>
  void enqueue(F&& task, bool busyRank = false) {
    queue_.push(std::forward<F>(task), busyRank);
  }
  weftResult_t synchronize();
  weftResult_t query();

 private:
  void loop();

  HostTaskQueue queue_;
  std::thread worker_;
};

// Registry of live streams: weftStream_t is an opaque pointer that may also
// be a cudaStream_t, so a lookup tells the two apart.
HostStream* findHostStream(weftStream_t s);
weftStream_t registerHostStream(HostStream* s);
bool unregisterHostStream(weftStream_t s);

}  // namespace weft
