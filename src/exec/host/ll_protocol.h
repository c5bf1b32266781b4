// The LL ("low latency") protocol for ranks on one host: small collectives
// without FIFO slots, counters or plans.
//
// Every rank owns a region of shared memory (mapped by every rank of the
// communicator at set-up, src/core/ll_comm.cc): a header line, then two
// buffers of 64-byte lines. A line carries 56 bytes of data and, in its last
// 8 bytes, the number of the round that wrote them. The writer stores the
// data, then the round number (release); a reader polls the number (acquire)
// and, when it matches, reads the data of that same line: data and flag
// travel in one cache line, so a reader needs no separate counter.
//
// Rounds are numbered per communicator (1, 2, ...); every rank runs the same
// rounds in the same order, since every rank runs the same collectives and
// cuts them alike. Round s uses buffer s % 2. A rank writes buffer s % 2
// again in round s + 2 only once every peer has started round s + 1, hence
// finished reading round s: known from the peer's round-(s+1) data it has
// read (AllReduce-like rounds, where everyone reads everyone), else from the
// peer's header (`entered`), which it waits for. So back-to-back calls never
// overwrite data a slow reader still needs, and round numbers never repeat
// in a line, so no stale flag matches.
//
// Collectives are one-shot (algorithms/one_shot.h): a round publishes this
// rank's piece of each contribution, then reads every piece it needs.
// Reductions run in rank order, ((c0 OP c1) OP c2) ..., so every rank gets
// the same bits. Waits spin, yield, then sleep on the rank's doorbell
// (Backoff, src/util/doorbell.h); a writer rings a peer's doorbell only when
// that peer sleeps, so the fast path makes no system call. The call path
// allocates nothing and calls through no std::function.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/plan.h"
#include "src/core/call_state.h"
#include "src/kernels/reduce.h"
#include "src/util/doorbell.h"

namespace weft::ll {

inline constexpr size_t kLineBytes = 64;
inline constexpr size_t kLinePayload = 56;  // a multiple of every element size

struct alignas(64) Line {
  unsigned char data[kLinePayload];
  std::atomic<uint64_t> round;  // the round whose data the line holds; 0: none yet
};
static_assert(sizeof(Line) == kLineBytes);

struct alignas(64) RegionHeader {
  std::atomic<uint64_t> entered;  // the last round this rank started
};

// One rank's region: header, then two buffers of `linesPerBuffer` lines.
size_t regionBytes(size_t linesPerBuffer);

struct Region {
  RegionHeader* header = nullptr;
  Line* buffer[2] = {nullptr, nullptr};
};
// The region laid out at `base` (zeroed memory is a valid empty region).
Region regionAt(void* base, size_t linesPerBuffer);

// How waits back off and when they give up.
struct WaitSetup {
  Doorbell* bell = nullptr;                        // this rank's
  const std::atomic<bool>* aborting = nullptr;     // weftCommAbort
  const std::atomic<int>* asyncError = nullptr;    // the communicator's error
  int64_t timeoutMs = 0;                           // 0: none
  bool busyPoll = false;                           // the rank has a core of its own (busyPolls)
  CallState* state = nullptr;                      // where a wait is, for the diagnosis
};

struct Call {
  plan::Coll coll = plan::Coll::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  uint64_t count = 0;  // NCCL's meaning, as in CollArgs
  uint32_t elemSize = 4;
  int root = 0;
  kernels::RedOp op;
};

class Engine {
 public:
  // regions and bells: one per rank of the communicator (this rank's too).
  Engine(int rank, int nranks, size_t linesPerBuffer, std::vector<Region> regions, std::vector<Doorbell*> bells,
         const WaitSetup& wait);
  // Runs one collective (AllReduce, ReduceScatter, AllGather, Broadcast,
  // Reduce). Throws weft::Error on abort, a failed communicator or a timeout.
  void run(const Call& c);
  // Data bytes one rank can publish per round.
  uint64_t roundBytes() const { return lines_ * kLinePayload; }
  uint64_t roundsRun() const { return round_; }

 private:
  uint64_t beginRound(bool writes);
  void publishedRound();
  void write(size_t line, const unsigned char* src, uint64_t bytes, uint64_t s, const kernels::RedOp& op, bool pre);
  void copyFrom(int peer, size_t line, unsigned char* dst, uint64_t bytes, uint64_t s);
  void reduceAll(size_t line, unsigned char* dst, uint64_t elems, uint64_t s, const Call& c);
  void awaitLine(const Line& l, uint64_t s, int peer) {
    if (l.round.load(std::memory_order_acquire) != s) [[unlikely]] awaitLineSlow(l, s, peer);
  }
  void awaitLineSlow(const Line& l, uint64_t s, int peer);
  void awaitEntered(int peer, uint64_t s);
  template <class Ready>
  void waitSlow(Ready ready, int peer, bool forWrite);
  [[noreturn]] void fail(int64_t waitedNs, int peer, bool forWrite);

  void allReduce(const Call& c);
  void reduceScatter(const Call& c);
  void allGather(const Call& c);
  void broadcast(const Call& c);
  void reduce(const Call& c);
  // Publishes this rank's contribution each round; reduces all of them here
  // when `reduceHere` (every rank for AllReduce, the root for Reduce).
  void publishAndReduce(const Call& c, bool reduceHere);

  const int rank_, nranks_;
  const size_t lines_;
  std::vector<Region> regions_;
  std::vector<Doorbell*> bells_;
  WaitSetup wait_;
  WaitKnobs knobs_;
  uint64_t round_ = 0;
  plan::Coll coll_ = plan::Coll::AllReduce;  // the call in progress, for errors
  // known_[q]: the latest round rank q is known to have started.
  std::vector<uint64_t> known_;
  // Staging for a block of gathered lines (and for pre-scaled data).
  std::vector<unsigned char> stage_;
};

}  // namespace weft::ll
