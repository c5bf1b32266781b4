#include "src/exec/host/ll_protocol.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "src/util/clock.h"
#include "src/util/error.h"

namespace weft::ll {
namespace {

// Lines gathered per reduction call: the reduction loops run over a few KB
// at once instead of 56 bytes per call.
constexpr size_t kBlockLines = 64;
constexpr size_t kBlockBytes = kBlockLines * kLinePayload;

bool hasPreOp(const kernels::RedOp& op) { return op.kind == kernels::OpKind::PreMulSum; }

}  // namespace

size_t regionBytes(size_t linesPerBuffer) { return sizeof(RegionHeader) + 2 * linesPerBuffer * sizeof(Line); }

Region regionAt(void* base, size_t linesPerBuffer) {
  Region r;
  r.header = static_cast<RegionHeader*>(base);
  Line* lines = reinterpret_cast<Line*>(static_cast<unsigned char*>(base) + sizeof(RegionHeader));
  r.buffer[0] = lines;
  r.buffer[1] = lines + linesPerBuffer;
  return r;
}

Engine::Engine(int rank, int nranks, size_t linesPerBuffer, std::vector<Region> regions, std::vector<Doorbell*> bells,
               const WaitSetup& wait)
    : rank_(rank),
      nranks_(nranks),
      lines_(linesPerBuffer),
      regions_(std::move(regions)),
      bells_(std::move(bells)),
      wait_(wait),
      knobs_(rankWaitKnobs(wait.busyPoll)),
      known_(size_t(nranks), 0),
      stage_(kBlockBytes) {
  // Rounds continue from what this rank's region already shows (none: 0).
  round_ = regions_[size_t(rank_)].header->entered.load(std::memory_order_relaxed);
}

// Starts round s. A round that writes must not overwrite buffer s % 2 while
// a peer may still read it (round s - 2): every peer must have started s - 1.
uint64_t Engine::beginRound(bool writes) {
  const uint64_t s = ++round_;
  regions_[size_t(rank_)].header->entered.store(s, std::memory_order_release);
  if (writes && s > 2)
    for (int q = 0; q < nranks_; q++)
      if (q != rank_ && known_[size_t(q)] + 1 < s) awaitEntered(q, s - 1);
  if (!writes) publishedRound();  // a peer may wait for `entered`
  return s;
}

// Wakes the peers that sleep waiting for what this rank just stored (a line
// or its header): the fence orders those stores before the look at
// `sleepers`, and a sleeper counts itself before its last look at the line
// (sleepUnless), so one of the two sees the other.
void Engine::publishedRound() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int q = 0; q < nranks_; q++)
    if (q != rank_) ringIfSleeping(bells_[size_t(q)]);
}

void Engine::write(size_t line, const unsigned char* src, uint64_t bytes, uint64_t s, const kernels::RedOp& op,
                   bool pre) {
  Line* out = regions_[size_t(rank_)].buffer[s & 1] + line;
  const uint64_t elemSize = kernels::typeSize(op.type);
  while (bytes > 0) {
    const uint64_t block = std::min<uint64_t>(bytes, kBlockBytes);
    const unsigned char* from = src;
    if (pre) {
      kernels::transform(stage_.data(), src, block / elemSize, op, kernels::kApplyPre);
      from = stage_.data();
    }
    for (uint64_t off = 0; off < block; off += kLinePayload, out++) {
      const uint64_t n = std::min<uint64_t>(kLinePayload, block - off);
      if (n == kLinePayload) memcpy(out->data, from + off, kLinePayload);
      else memcpy(out->data, from + off, n);
      out->round.store(s, std::memory_order_release);
    }
    src += block;
    bytes -= block;
  }
}

// dst = the `bytes` bytes rank `peer` wrote in round s from `line` on.
// The writer fills lines in order, each published by a release store of its
// round: once the last line of a block shows round s, every line before it
// does too (and its data is visible). So a block costs one wait, and a
// reader that catches up with its writer waits for a block instead of
// bouncing every line between the two cores.
void Engine::copyFrom(int peer, size_t line, unsigned char* dst, uint64_t bytes, uint64_t s) {
  const Line* in = regions_[size_t(peer)].buffer[s & 1] + line;
  for (uint64_t start = 0; start < bytes; start += kBlockBytes) {
    const uint64_t end = std::min<uint64_t>(bytes, start + kBlockBytes);
    awaitLine(in[(end - 1) / kLinePayload], s, peer);
    for (uint64_t off = start; off < end; off += kLinePayload) {
      const Line& l = in[off / kLinePayload];
      const uint64_t n = std::min<uint64_t>(kLinePayload, end - off);
      if (n == kLinePayload) memcpy(dst + off, l.data, kLinePayload);
      else memcpy(dst + off, l.data, n);
    }
  }
  known_[size_t(peer)] = s;
}

// dst = c0 OP c1 OP ... OP c(n-1), in rank order, finalised (Avg); c_j is
// what rank j wrote in round s from `line` on (pre-scaled by its writer).
void Engine::reduceAll(size_t line, unsigned char* dst, uint64_t elems, uint64_t s, const Call& c) {
  const uint64_t bytes = elems * c.elemSize;
  for (uint64_t off = 0; off < bytes; off += kBlockBytes) {
    const uint64_t block = std::min<uint64_t>(kBlockBytes, bytes - off);
    const size_t at = line + off / kLinePayload;
    copyFrom(0, at, dst + off, block, s);
    for (int j = 1; j < nranks_; j++) {
      copyFrom(j, at, stage_.data(), block, s);
      kernels::reduce(dst + off, dst + off, stage_.data(), block / c.elemSize, c.op,
                      j == nranks_ - 1 ? unsigned(kernels::kApplyPost) : 0u);
    }
  }
}

void Engine::awaitLineSlow(const Line& l, uint64_t s, int peer) {
  waitSlow([&] { return l.round.load(std::memory_order_acquire) == s; }, peer, false);
}

void Engine::awaitEntered(int peer, uint64_t s) {
  const std::atomic<uint64_t>& e = regions_[size_t(peer)].header->entered;
  uint64_t seen = e.load(std::memory_order_acquire);
  if (seen < s) {
    waitSlow([&] { return e.load(std::memory_order_acquire) >= s; }, peer, true);
    seen = e.load(std::memory_order_acquire);
  }
  known_[size_t(peer)] = seen;
}

template <class Ready>
void Engine::waitSlow(Ready ready, int peer, bool forWrite) {
  Backoff b(knobs_);
  const int64_t timeoutNs = wait_.timeoutMs * 1000000;
  bool noted = false;
  for (;;) {
    const uint32_t seen = wait_.bell->seq.load(std::memory_order_acquire);
    if (ready()) break;
    const WaitPhase phase = b.idle();
    if (phase == WaitPhase::Spin) {
      b.pause(phase, wait_.bell, seen);
      continue;
    }
    if (!noted && wait_.state) wait_.state->noteWait(0, int(std::min<uint64_t>(round_, INT32_MAX)), peer, forWrite);
    noted = true;
    const int64_t waited = nowNs() - b.idleSinceNs();
    if ((wait_.aborting && wait_.aborting->load(std::memory_order_acquire)) ||
        (wait_.asyncError && wait_.asyncError->load(std::memory_order_acquire) != weftSuccess) ||
        (timeoutNs > 0 && waited > timeoutNs))
      fail(waited, peer, forWrite);
    if (phase == WaitPhase::Sleep) {
      const int64_t slice = timeoutNs > 0 ? std::min(knobs_.sleepSliceNs, timeoutNs - waited) : knobs_.sleepSliceNs;
      sleepUnless(wait_.bell, seen, std::max<int64_t>(slice, 1), ready);
      continue;
    }
    b.pause(phase, wait_.bell, seen);
  }
  if (noted && wait_.state) wait_.state->clearWait();
}

void Engine::fail(int64_t waitedNs, int peer, bool forWrite) {
  if (wait_.aborting && wait_.aborting->load(std::memory_order_acquire))
    raise(weftRemoteError, "rank %d: operation aborted (weftCommAbort or a failed peer)", rank_);
  if (wait_.asyncError) {
    const weftResult_t e = static_cast<weftResult_t>(wait_.asyncError->load(std::memory_order_acquire));
    if (e != weftSuccess)
      throw Error(e, "rank " + std::to_string(rank_) + ": communicator failed: " + weftGetErrorString(e));
  }
  raise(weftTimeout,
        "rank %d: %s (ll protocol, round %lu) made no progress for %ld ms (WEFT_TIMEOUT_MS), waiting for rank %d %s",
        rank_, plan::collName(coll_), static_cast<unsigned long>(round_), static_cast<long>(waitedNs / 1000000), peer,
        forWrite ? "to finish the round before last" : "to publish its data");
}

void Engine::run(const Call& c) {
  coll_ = c.coll;
  if (c.count == 0) return;
  switch (c.coll) {
    case plan::Coll::AllReduce: allReduce(c); return;
    case plan::Coll::ReduceScatter: reduceScatter(c); return;
    case plan::Coll::AllGather: allGather(c); return;
    case plan::Coll::Broadcast: broadcast(c); return;
    case plan::Coll::Reduce: reduce(c); return;
    default: raise(weftInternalError, "ll protocol: %s is not one-shot", plan::collName(c.coll));
  }
}

void Engine::allReduce(const Call& c) { publishAndReduce(c, true); }

// Every rank publishes; the root reduces all contributions, its own read
// back from its region like the others so that the order is the same.
void Engine::reduce(const Call& c) { publishAndReduce(c, rank_ == c.root); }

void Engine::publishAndReduce(const Call& c, bool reduceHere) {
  const auto* send = static_cast<const unsigned char*>(c.send);
  auto* recv = static_cast<unsigned char*>(c.recv);
  const uint64_t per = roundBytes() / c.elemSize;
  for (uint64_t off = 0; off < c.count; off += per) {
    const uint64_t n = std::min(per, c.count - off);
    const uint64_t s = beginRound(true);
    write(0, send + off * c.elemSize, n * c.elemSize, s, c.op, hasPreOp(c.op));
    publishedRound();
    if (reduceHere) reduceAll(0, recv + off * c.elemSize, n, s, c);
  }
}

// Each round publishes a piece of every rank's block, each at its own line
// range; rank r reduces the pieces of block r.
void Engine::reduceScatter(const Call& c) {
  const auto* send = static_cast<const unsigned char*>(c.send);
  auto* recv = static_cast<unsigned char*>(c.recv);
  const size_t linesPerBlock = lines_ / size_t(nranks_);
  const uint64_t per = linesPerBlock * kLinePayload / c.elemSize;
  for (uint64_t off = 0; off < c.count; off += per) {
    const uint64_t n = std::min(per, c.count - off);
    const uint64_t s = beginRound(true);
    for (int q = 0; q < nranks_; q++)
      write(size_t(q) * linesPerBlock, send + (uint64_t(q) * c.count + off) * c.elemSize, n * c.elemSize, s, c.op,
            hasPreOp(c.op));
    publishedRound();
    reduceAll(size_t(rank_) * linesPerBlock, recv + off * c.elemSize, n, s, c);
  }
}

void Engine::allGather(const Call& c) {
  const auto* send = static_cast<const unsigned char*>(c.send);
  auto* recv = static_cast<unsigned char*>(c.recv);
  const uint64_t per = roundBytes() / c.elemSize;
  for (uint64_t off = 0; off < c.count; off += per) {
    const uint64_t n = std::min(per, c.count - off), bytes = n * c.elemSize;
    const uint64_t s = beginRound(true);
    write(0, send + off * c.elemSize, bytes, s, c.op, false);
    publishedRound();
    for (int j = 0; j < nranks_; j++) {
      unsigned char* dst = recv + (uint64_t(j) * c.count + off) * c.elemSize;
      if (j != rank_) copyFrom(j, 0, dst, bytes, s);
      else if (dst != send + off * c.elemSize) memcpy(dst, send + off * c.elemSize, bytes);
    }
  }
}

void Engine::broadcast(const Call& c) {
  const auto* send = static_cast<const unsigned char*>(c.send);
  auto* recv = static_cast<unsigned char*>(c.recv);
  const bool root = rank_ == c.root;
  const uint64_t per = roundBytes() / c.elemSize;
  for (uint64_t off = 0; off < c.count; off += per) {
    const uint64_t bytes = std::min(per, c.count - off) * c.elemSize, at = off * c.elemSize;
    const uint64_t s = beginRound(root);
    if (!root) {
      copyFrom(c.root, 0, recv + at, bytes, s);
      continue;
    }
    write(0, send + at, bytes, s, c.op, false);
    publishedRound();
    if (recv + at != send + at) memcpy(recv + at, send + at, bytes);
  }
}


}  // namespace weft::ll
