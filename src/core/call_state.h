// What this rank of a communicator is doing, for "who has not arrived"
// diagnosis of a hung collective (src/core/diagnose.h).
//
// One writer (the thread running the communicator's operations, under its
// execMutex) stores with relaxed atomics; any thread may read at any time
// (the bootstrap reader that answers a diagnosis query, the timeout path, a
// signal). A reader may see fields of two neighbouring moments mixed: good
// enough to tell which rank is missing, and it costs the call path only
// plain stores on a cache line nobody else writes.
#pragma once

#include <atomic>
#include <cstdint>

namespace weft {

enum class CallPhase : int32_t {
  Idle = 0,      // no operation yet
  Running = 1,   // inside the operation (host executor)
  Done = 2,      // the operation finished
  Failed = 3,    // the operation ended with an error
  Launched = 4,  // device buffers: queued on the caller's CUDA stream (progress not tracked)
};

// One rank's state as it travels in a diagnosis reply (plain bytes: every
// rank runs the same library on the same byte order).
struct RankCallState {
  uint64_t seq = 0;    // collectives begun so far: the current or last one's number (#1 is the first)
  uint64_t count = 0;  // the current or last operation's count (elements)
  uint64_t bytes = 0;  // bytes its steps have moved so far in it (host executor)
  int32_t coll = -1;   // plan::Coll of the current or last operation; -1: none yet
  int32_t phase = 0;   // CallPhase
  int32_t channel = -1;   // where it waits: channel and step index, -1 when not waiting
  int32_t step = -1;
  int32_t waitPeer = -1;  // the peer it waits on, -1 when not waiting
  int32_t waitSend = 0;   // 1: for a free slot toward waitPeer; 0: for data from waitPeer
};

class CallState {
 public:
  // A collective (counted) or a batch of sends and receives (seq unchanged:
  // only the ranks of the pairs take part, so it cannot be numbered alike on
  // every rank).
  void begin(int32_t coll, uint64_t count, bool counted) {
    clearWait();
    bytes_.store(0, std::memory_order_relaxed);
    count_.store(count, std::memory_order_relaxed);
    coll_.store(coll, std::memory_order_relaxed);
    if (counted) seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    phase_.store(static_cast<int32_t>(CallPhase::Running), std::memory_order_release);
  }
  // A failed operation keeps where it waited: that names the culprit.
  void end(CallPhase how) {
    if (how != CallPhase::Failed) clearWait();
    phase_.store(static_cast<int32_t>(how), std::memory_order_release);
  }

  // Host executor: pieces moved, and where it waits once a wait outlasts
  // its spin phase.
  void addBytes(uint64_t n) { bytes_.store(bytes_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void noteWait(int channel, int step, int peer, bool forSend) {
    channel_.store(channel, std::memory_order_relaxed);
    step_.store(step, std::memory_order_relaxed);
    waitSend_.store(forSend ? 1 : 0, std::memory_order_relaxed);
    waitPeer_.store(peer, std::memory_order_relaxed);
  }
  void clearWait() {
    waitPeer_.store(-1, std::memory_order_relaxed);
    channel_.store(-1, std::memory_order_relaxed);
    step_.store(-1, std::memory_order_relaxed);
  }

  RankCallState snapshot() const {
    RankCallState s;
    s.phase = phase_.load(std::memory_order_acquire);
    s.seq = seq_.load(std::memory_order_relaxed);
    s.count = count_.load(std::memory_order_relaxed);
    s.bytes = bytes_.load(std::memory_order_relaxed);
    s.coll = coll_.load(std::memory_order_relaxed);
    s.channel = channel_.load(std::memory_order_relaxed);
    s.step = step_.load(std::memory_order_relaxed);
    s.waitPeer = waitPeer_.load(std::memory_order_relaxed);
    s.waitSend = waitSend_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  alignas(64) std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<int32_t> coll_{-1};
  std::atomic<int32_t> phase_{0};
  std::atomic<int32_t> channel_{-1};
  std::atomic<int32_t> step_{-1};
  std::atomic<int32_t> waitPeer_{-1};
  std::atomic<int32_t> waitSend_{0};
};

}  // namespace weft
