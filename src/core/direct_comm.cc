#include "src/core/direct_comm.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "algorithms/collectives.h"
#include "algorithms/direct.h"
#include "src/core/comm.h"
#include "src/util/doorbell.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/tsan_sync.h"

namespace weft {

// One handshake's worth of what a rank publishes.
struct alignas(64) DirectSlot {
  std::atomic<uint64_t> seq;  // the handshake this slot holds (0: none yet)
  uint64_t process;           // the publisher's process (random per process)
  BufName send, recv;
};

// A rank's region: two slots (handshake s uses slot s % 2: a rank reaches
// handshake s + 2 only after every rank has entered the collective of s + 1,
// hence read s), the barrier counter and a failure flag.
struct DirectRegion {
  DirectSlot slot[2];
  alignas(64) std::atomic<uint64_t> barrier;  // barriers this rank has reached
  std::atomic<uint64_t> failed;               // nonzero: this rank gave up on the call
};

namespace {

constexpr const char* kRegionPrefix = "/weft-dr-";

// Random per process, and mixed with the pid on every call: a child forked
// after its parent used weft inherits the parent's random value, and must
// not pass for the parent (it would read peers' buffers at the parent's
// addresses).
uint64_t processId() {
  static const uint64_t id = [] {
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != sizeof(v)) raiseErrno("getrandom");
    return v;
  }();
  return (id ^ (uint64_t(getpid()) * 0x9E3779B97F4A7C15ull)) | 1;
}

// What each rank publishes at set-up: its region's name (empty: no direct
// path for this communicator) and, from rank 0, the size threshold.
struct RegionName {
  char name[48] = {};
  uint64_t minBytes = 0;
};

bool validName(const BufName& n) {
  return n.reach == BufReach::Segment && memchr(n.name, 0, sizeof(n.name)) &&
         strncmp(n.name, kMemSegmentPrefix, strlen(kMemSegmentPrefix)) == 0;
}

// WEFT_DIRECT_MIN_BYTES where it was given (environment or a settings
// file); else a tune file's measured threshold for this shape; else the
// setting's default.
uint64_t directMinBytesFor(const weftComm& comm) {
  const uint64_t setting = uint64_t(std::max<int64_t>(comm.config.get(settings::kDirectMinBytes), 0));
  if (comm.config.value(settings::kDirectMinBytes.id).source.kind != settings::Source::Default) return setting;
  const algo::CostInputs& in = comm.costBase;
  if (in.directMinBytes > 0 && in.measuredRanks == comm.nranks && in.measuredHosts == in.nHosts)
    return in.directMinBytes;
  return setting;
}

}  // namespace

uint64_t sendBytesOf(const OpDesc& op, int nranks) {
  return plan::sendElems(op.coll, op.count, nranks) * kernels::typeSize(op.type);
}
uint64_t recvBytesOf(const OpDesc& op, int nranks) {
  return plan::recvElems(op.coll, op.count, nranks) * kernels::typeSize(op.type);
}

DirectComm::~DirectComm() = default;

bool DirectComm::candidate(const OpDesc& op) const {
  if (op.device || op.wire != plan::Wire::Native || !algo::directSupports(op.coll)) return false;
  // PreMulSum scales each rank's input by that rank's own scalar, and a
  // direct plan reduces every rank's input here with this rank's: the FIFO
  // path (each rank scales what it sends) stays right.
  if (op.op.kind == kernels::OpKind::PreMulSum) return false;
  return plan::largestBufferElems(op.coll, op.count, comm_->nranks) * kernels::typeSize(op.type) >= minBytes_;
}

void DirectComm::failWait(int rank, bool timedOut, const char* what) {
  regions[size_t(comm_->rank)]->failed.store(1, std::memory_order_seq_cst);
  if (timedOut)
    raise(weftTimeout, "rank %d: waited %ld ms (WEFT_TIMEOUT_MS) for rank %d at the %s of a single-copy collective",
          comm_->rank, static_cast<long>(comm_->timeoutMs), rank, what);
  raise(weftRemoteError, "rank %d: single-copy collective stopped at the %s: abort, a failed communicator or rank %d gave up",
        comm_->rank, what, rank);
}

void DirectComm::barrier() {
  const uint64_t b = ++barriers_;
  const int me = comm_->rank;
  // seq_cst: what this rank wrote into peers' buffers, and its arrival,
  // are visible before it reads a peer's failed flag below.
  tsan::release(syncKeys[size_t(me)]);
  regions[size_t(me)]->barrier.store(b, std::memory_order_seq_cst);
  for (int q = 0; q < comm_->nranks; q++)
    if (q != me) ringIfSleeping(comm_->peerBells[size_t(q)]);
  const WaitKnobs knobs = rankWaitKnobs(comm_->busyPoll);
  for (int q = 0; q < comm_->nranks; q++) {
    if (q == me) continue;
    DirectRegion* r = regions[size_t(q)];
    WaitResult w = waitFor(
        comm_->bell, knobs, comm_->timeoutMs * 1000000, [&] { return r->barrier.load(std::memory_order_seq_cst) >= b; },
        [&] {
          return r->failed.load(std::memory_order_seq_cst) || comm_->aborting.load() ||
                 comm_->getAsyncError() != weftSuccess;
        });
    if (w != WaitResult::Ready) failWait(q, w == WaitResult::TimedOut, "barrier");
    tsan::acquire(syncKeys[size_t(q)]);
    // q arrived, but may have given up since (timed out on a slower rank)
    // and returned: its caller may be reusing or freeing its buffers while
    // this rank still read or wrote them, so this call has no result.
    if (r->failed.load(std::memory_order_seq_cst)) failWait(q, false, "barrier");
  }
}

// rank's buffer n as an address here; null when it cannot be reached.
char* DirectComm::reach(int rank, const BufName& n, uint64_t bytes) {
  const DirectSlot& mine = regions[size_t(comm_->rank)]->slot[seq_ & 1];
  const DirectSlot& theirs = regions[size_t(rank)]->slot[seq_ & 1];
  if (theirs.process == mine.process) {
    // A thread of this process: the owner's own address, no mapping of this
    // rank's (no mmap per peer buffer, the fast path stays a lookup). The
    // owner may give up on the call (a timeout) and return while this rank
    // is still in its steps, and its caller may then free the allocation;
    // the reference held until endCall() keeps the pages mapped meanwhile,
    // as a process peer's own mapping does, so this rank ends at its next
    // barrier with an error instead of faulting. Ordinary memory
    // (BufReach::Process) has no allocation to hold: its owner must keep it
    // until every rank has returned from the call.
    if (n.reach == BufReach::Process) return reinterpret_cast<char*>(n.addr);
    if (n.reach != BufReach::Segment) return nullptr;
    std::shared_ptr<const void> hold = holdAllocation(n.segId, n.addr, bytes);
    if (!hold) return nullptr;
    held_.push_back(std::move(hold));
    return reinterpret_cast<char*>(n.addr);
  }
  if (!validName(n) || n.offset > n.segBytes || bytes > n.segBytes - n.offset) return nullptr;
  auto key = std::make_pair(rank, n.segId);
  auto it = mapped_.find(key);
  if (it == mapped_.end() || it->second.size() != n.segBytes) {
    mapped_.erase(key);
    it = mapped_.emplace(key, ShmSegment::open(n.name, n.segBytes)).first;
  }
  return static_cast<char*>(it->second.data()) + n.offset;
}

bool DirectComm::agree(const OpDesc& op, const PinnedBuffers& pins) {
  const int me = comm_->rank, n = comm_->nranks;
  const uint64_t s = ++seq_;
  DirectSlot& slot = regions[size_t(me)]->slot[s & 1];
  slot.process = processId();
  slot.send = pins.send();
  slot.recv = pins.recv();
  tsan::release(syncKeys[size_t(me)]);
  slot.seq.store(s, std::memory_order_release);
  for (int q = 0; q < n; q++)
    if (q != me) ringIfSleeping(comm_->peerBells[size_t(q)]);
  const WaitKnobs knobs = rankWaitKnobs(comm_->busyPoll);
  for (int q = 0; q < n; q++) {
    if (q == me) continue;
    const DirectSlot& t = regions[size_t(q)]->slot[s & 1];
    WaitResult w = waitFor(
        comm_->bell, knobs, comm_->timeoutMs * 1000000, [&] { return t.seq.load(std::memory_order_acquire) == s; },
        [&] { return comm_->aborting.load() || comm_->getAsyncError() != weftSuccess; });
    if (w != WaitResult::Ready) failWait(q, w == WaitResult::TimedOut, "handshake");
    tsan::acquire(syncKeys[size_t(q)]);
  }
  for (int q = 0; q < n; q++)  // a rank that gave up on an earlier call: its buffers may be gone
    if (q != me && regions[size_t(q)]->failed.load(std::memory_order_acquire)) failWait(q, false, "handshake");
  // The decision, from the published slots alone: every buffer the
  // collective touches on every rank is registered, and one in ordinary
  // memory only where all ranks are threads of one process.
  const bool recvToo = op.coll == plan::Coll::AllReduce;
  bool oneProcess = true, all = true;
  for (int q = 0; q < n; q++) {
    const DirectSlot& t = regions[size_t(q)]->slot[s & 1];
    oneProcess &= t.process == slot.process;
  }
  for (int q = 0; q < n; q++) {
    const DirectSlot& t = regions[size_t(q)]->slot[s & 1];
    auto ok = [&](const BufName& b) { return b.reach == BufReach::Segment || (b.reach == BufReach::Process && oneProcess); };
    all &= ok(t.send) && (!recvToo || ok(t.recv));
  }
  if (!all) return false;
  buffers.assign(size_t(n), {});
  const uint64_t sendBytes = sendBytesOf(op, n), recvBytes = recvBytesOf(op, n);
  for (int q = 0; q < n; q++) {
    const DirectSlot& t = regions[size_t(q)]->slot[s & 1];
    BufferBinding& b = buffers[size_t(q)];
    if (q == me) {
      b = {op.send, op.recv};
      continue;
    }
    b.send = reach(q, t.send, sendBytes);
    b.recv = recvToo ? reach(q, t.recv, recvBytes) : nullptr;
    if (!b.send || (recvToo && !b.recv)) {
      if (regions[size_t(q)]->failed.load(std::memory_order_acquire)) failWait(q, false, "handshake");
      regions[size_t(me)]->failed.store(1, std::memory_order_seq_cst);
      raise(weftInvalidArgument, "rank %d: rank %d published a registered buffer that cannot be mapped here", me, q);
    }
  }
  callsRun++;
  return true;
}

void setUpDirect(weftComm* comm, int nHosts) {
  if (comm->nranks == 1 || nHosts > 1) return;
  const bool on = comm->config.get(settings::kDirect) && !comm->config.get(settings::kShmDisable);
  RegionName me;
  me.minBytes = directMinBytesFor(*comm);
  ShmSegment own;
  if (on) {
    try {
      own = ShmSegment::create("weft-dr", sizeof(DirectRegion));
      snprintf(me.name, sizeof(me.name), "%s", own.name().c_str());
    } catch (const Error& e) {
      WEFT_WARN("single-copy collectives off: %s", e.what());
    }
  }
  // Every rank takes part whenever ranks share the host, so that ranks whose
  // settings differ agree (on off) instead of hanging.
  std::vector<RegionName> all(size_t(comm->nranks));
  all[size_t(comm->rank)] = me;
  comm->bootstrap->allGather(all.data(), sizeof(RegionName));
  for (RegionName& r : all) {
    r.name[sizeof(r.name) - 1] = 0;  // a peer's name ends inside its array and names a region weft made
    if (strncmp(r.name, kRegionPrefix, strlen(kRegionPrefix)) != 0) {
      WEFT_INFO(kInit, "single-copy collectives off: WEFT_DIRECT=0 or WEFT_SHM_DISABLE on some rank, or no region");
      return;
    }
  }
  auto d = std::make_unique<DirectComm>(comm, all[0].minBytes);  // rank 0's threshold for all
  d->own = std::move(own);
  d->regions.assign(size_t(comm->nranks), nullptr);
  for (int r = 0; r < comm->nranks; r++) {
    d->syncKeys.push_back(tsan::keyFor(all[size_t(r)].name));
    if (r == comm->rank) {
      d->regions[size_t(r)] = static_cast<DirectRegion*>(d->own.data());
      continue;
    }
    d->peerRegions.push_back(ShmSegment::open(all[size_t(r)].name, sizeof(DirectRegion)));
    d->regions[size_t(r)] = static_cast<DirectRegion*>(d->peerRegions.back().data());
  }
  comm->bootstrap->barrier();  // every rank has mapped every region
  d->own.unlink();
  comm->direct = std::move(d);
  WEFT_INFO(kInit, "single-copy collectives on registered buffers from %lu bytes",
            static_cast<unsigned long>(all[0].minBytes));
}

}  // namespace weft
