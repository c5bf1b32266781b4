// Call traces (WEFT_TRACE_FILE): a bounded ring of fixed-size events per
// trace file, written as Chrome/Perfetto trace-event JSON.
//
// Events are plain data (names are pointers to string literals or copied
// inline), so the file can be written from a fatal-signal handler with
// nothing but write(2): no allocation, no locks, no stdio. Recording is
// lock-free: a slot is claimed with one fetch_add and published with its
// sequence number; when the ring is full the oldest events are overwritten
// and counted as dropped.
//
// Several communicators of one process whose trace paths expand to the same
// file share one buffer (acquireTraceBuffer); each event carries its rank as
// the trace's pid.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace weft {

struct TraceEvent {
  enum Kind : uint8_t { Call, Step };
  std::atomic<uint64_t> seq{0};  // index + 1 once the slot is written
  Kind kind = Call;
  uint8_t nRecv = 0, nSend = 0;
  int16_t channels = 0;  // Call: channels of the plan
  int8_t commSlot = -1;  // the communicator (TraceBuffer::addRank's slot)
  int32_t pid = 0;       // the rank
  int32_t tid = 0;       // 0: calls; 1 + c: channel c's steps
  int32_t root = -1;     // Call: root or peer (-1: none)
  uint32_t index = 0;    // Call: the communicator's call number; Step: step index
  int64_t startNs = 0, durNs = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;         // Call: elements per rank; Step: elements
  const char* name = "";      // a string literal: collective or step shape
  const char* type = "";      // Call: data type (literal)
  const char* op = "";        // Call: reduction (literal)
  const char* result = "";    // Call: "ok", or the error that ended it (literal)
  char algo[16] = {};         // Call: algorithm name (copied: registry names may move)
  char proto[8] = {};         // Call: protocol name
  int16_t peer[4] = {-1, -1, -1, -1};  // Step: recv peers 0-1, send peers 2-3
  int64_t waitNs[4] = {};              // Step: time blocked on each of those
  int64_t moveNs = 0;                  // Step: time spent moving/reducing data
  uint32_t steps = 0;                  // Call: steps in this rank's plan
};

// What the file says about one rank writing into it.
struct TraceRankInfo {
  int rank = -1;
  int pid = 0;
  int64_t clockSyncNs = 0;  // steady clock right after the init barrier
  int64_t wallSyncNs = 0;   // system clock at the same moment
  char host[64] = {};
  char comm[32] = {};
};

class TraceBuffer {
 public:
  static constexpr int kMaxRanks = 16;

  TraceBuffer(std::string path, int fd, uint64_t capacity);
  ~TraceBuffer();
  TraceBuffer(const TraceBuffer&) = delete;
  TraceBuffer& operator=(const TraceBuffer&) = delete;

  // Fills a slot: `fill` writes the event's fields (seq is set after).
  template <class F>
  void record(F&& fill) {
    const uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    TraceEvent& e = events_[i % capacity_];
    e.seq.store(0, std::memory_order_relaxed);
    fill(e);
    e.seq.store(i + 1, std::memory_order_release);
  }

  // Returns the communicator's slot for its events (-1: past kMaxRanks).
  int addRank(const TraceRankInfo& info);
  // Rewrites the whole file from the ring; flushes from several threads
  // take turns.
  void flush();
  // The same without the lock, for signal handlers: async-signal-safe, and
  // does nothing if the signal interrupted a write of this file.
  void flushFromSignal();

  const std::string& path() const { return path_; }
  uint64_t capacity() const { return capacity_; }

 private:
  std::string path_;
  int fd_;
  uint64_t capacity_;
  TraceEvent* events_;
  std::atomic<uint64_t> next_{0};
  std::mutex mutex_;  // addRank and flush; never taken by a signal handler
  std::atomic<int> nRanks_{0};
  TraceRankInfo ranks_[kMaxRanks];
  std::atomic<bool> flushing_{false};
};

// The buffer for `path` (already expanded), shared with other
// communicators of this process tracing to the same file. Opens (truncates)
// the file on first use; nullptr when it cannot be written (one WARN per
// path). Installs the fatal-signal handlers the first time.
std::shared_ptr<TraceBuffer> acquireTraceBuffer(const std::string& path, uint64_t capacity);

// WEFT_TRACE_FILE's pattern with %r -> rank, %h -> host name, %p -> pid.
std::string expandTracePath(const std::string& pattern, int rank);

}  // namespace weft
