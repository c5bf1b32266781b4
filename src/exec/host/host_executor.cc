#include "src/exec/host/host_executor.h"
#include "src/exec/host/step_trace.h"
#include "src/exec/host/direct_steps.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/core/call_state.h"
#include "src/kernels/convert.h"
#include "src/kernels/streaming.h"
#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {
namespace {

using plan::Buf;
using plan::Step;

struct StepFifos {
  FifoEnd in[2];
  FifoEnd out[2];
};

// A piece the mover sends straight from the caller's memory
// (FifoUserMemory): that memory stays untouched until the slot is freed.
struct SentFromUser {
  const FifoHeader* hdr;
  uint32_t seq;  // the slot
  const char* at;
  uint64_t bytes;
};

struct ChannelCursor {
  const std::vector<Step>* steps = nullptr;
  std::vector<StepFifos> fifos;  // resolved once per run, per step
  size_t step = 0;
  uint64_t done = 0;  // elements of the current step already moved
  uint8_t waitingOn = 0;  // the FIFO the last blocked advance waited on: recv 0-1, send 2-3
  int32_t blockedOn = -1;   // the peer the last failed advance waited on
  bool blockedSend = false; // ... for a free slot toward it (else for its data)
  bool finished() const { return step >= steps->size(); }
};

class Runner {
 public:
  Runner(const plan::Plan& p, std::span<const BufferBinding> b, void* scratch, const kernels::RedOp& op,
         const HostExecContext& ctx)
      : plan_(p), bindings_(b), scratch_(static_cast<char*>(scratch)), op_(op), ctx_(ctx),
        elem_(p.elemSize), fifoElem_(plan::wireElemSize(p.wire, p.elemSize)),
        slice_(p.sliceBytes) {}

  void prepare(const FifoLookup& fifos) {
    // The cursors live in a per-thread pool that only grows, so repeated
    // calls (the training loop) allocate nothing here.
    thread_local std::vector<ChannelCursor> pool;
    if (pool.size() < plan_.channels.size()) pool.resize(plan_.channels.size());
    cursors_ = std::span<ChannelCursor>(pool.data(), plan_.channels.size());
    thread_local std::vector<SentFromUser> sent;
    sent.clear();
    sent_ = &sent;
    for (size_t c = 0; c < plan_.channels.size(); c++) {
      auto& cur = cursors_[c];
      cur.steps = &plan_.channels[c].steps;
      cur.step = 0;
      cur.done = 0;
      cur.fifos.resize(cur.steps->size());
      for (size_t s = 0; s < cur.steps->size(); s++) {
        const Step& st = (*cur.steps)[s];
        for (int i = 0; i < st.nRecv; i++) cur.fifos[s].in[i] = fifos.recv(st.recvPeer[i], st.conn);
        for (int i = 0; i < st.nSend; i++) cur.fifos[s].out[i] = fifos.send(st.sendPeer[i], st.conn);
        for (int i = 0; i < st.nRecv; i++) proxied_ |= cur.fifos[s].in[i].progress != nullptr;
        for (int i = 0; i < st.nSend; i++) proxied_ |= cur.fifos[s].out[i].progress != nullptr;
        for (int i = 0; i < st.nRecv; i++) userMemory_ |= cur.fifos[s].in[i].userMemory != nullptr;
        for (int i = 0; i < st.nSend; i++) userMemory_ |= cur.fifos[s].out[i].userMemory != nullptr;
      }
    }
  }

  // Waiting is busy-poll (a rank with a core of its own) or a few spins,
  // then yield, then sleep (Backoff, rankWaitKnobs, src/util/doorbell.h).
  // Ranks often outnumber cores: a yielding waiter hands its core straight
  // to the rank it waits for (no futex wake-up latency), and one that has
  // waited long sleeps on the doorbell so it costs nothing. The sleep comes
  // in bounded slices so abort and timeouts are noticed even if nobody rings.
  void run() {
    // A rank without a core of its own that waits on a proxied FIFO (a
    // socket) gets no spin phase: each poll of such a FIFO is a system call
    // that reads the socket (tryProgress), and polls in a row keep the core
    // from the rank that would send. Polling once per yield is how a rank
    // hears soonest from a peer that shares its core (4 processes on 2 cores
    // over TCP, 8 B: ~130 -> ~70 us). Nor does a rank busy-poll a proxied
    // FIFO when it has a core of its own: the proxy threads that move its
    // bytes need that core too (2 ranks on 2 cores over TCP, 8 B: about
    // half the runs took 110-190 us a call instead of 13-25 with it).
    WaitKnobs knobs = rankWaitKnobs(ctx_.busyPoll && !proxied_);
    if (proxied_) knobs.spins = 0;
    Backoff backoff(knobs);
    const int64_t timeoutNs = ctx_.timeoutMs * 1000000;
    for (;;) {
      uint32_t seen = ctx_.bell->seq.load(std::memory_order_acquire);
      bool progressed = false, allDone = true;
      for (auto& cur : cursors_) {
        if (ctx_.trace) [[unlikely]] progressed |= advanceTraced(cur);
        else while (!cur.finished() && advance(cur)) progressed = true;
        if (!cur.finished()) allDone = false;
      }
      // The caller's buffers are its own again once no mover reads them.
      if (allDone && !sendingFrom(nullptr, 0)) return;
      if (progressed) {
        if (waitNoted_) clearWait();
        backoff.reset();
        continue;
      }
      const WaitPhase phase = backoff.idle();
      if (phase != WaitPhase::Spin) {
        if (!waitNoted_) noteWait();
        checkHealth(backoff.idleSinceNs(), timeoutNs);
      }
      // Proxies this executor was moving bytes for take over while it sleeps.
      if (phase == WaitPhase::Sleep) handOverToProxies();
      backoff.pause(phase, ctx_.bell, seen);
    }
  }

 private:
  char* base(Buf b, uint16_t bind) const {
    switch (b) {
      case Buf::Send: return static_cast<char*>(const_cast<void*>(bindings_[bind].send));
      case Buf::Recv: return static_cast<char*>(bindings_[bind].recv);
      case Buf::Scratch: return scratch_;
      case Buf::None: return nullptr;
    }
    return nullptr;
  }

  // The diagnosis state says where the first unfinished channel waits.
  void noteWait() {
    waitNoted_ = true;
    if (!ctx_.state) return;
    for (size_t c = 0; c < cursors_.size(); c++)
      if (!cursors_[c].finished()) {
        const ChannelCursor& cur = cursors_[c];
        ctx_.state->noteWait(int(c), int(cur.step), cur.blockedOn, cur.blockedSend);
        return;
      }
  }
  void clearWait() {
    waitNoted_ = false;
    if (ctx_.state) ctx_.state->clearWait();
  }

  void handOverToProxies() {
    for (auto& cur : cursors_) {
      if (cur.finished()) continue;
      const Step& st = (*cur.steps)[cur.step];
      const StepFifos& f = cur.fifos[cur.step];
      for (int i = 0; i < st.nRecv; i++)
        if (f.in[i].progress) f.in[i].progress->idle();
      for (int i = 0; i < st.nSend; i++)
        if (f.out[i].progress) f.out[i].progress->idle();
    }
  }

  void checkHealth(int64_t lastProgress, int64_t timeoutNs) {
    if (ctx_.abortFlag && ctx_.abortFlag->load(std::memory_order_acquire))
      raise(weftRemoteError, "rank %d: operation aborted (weftCommAbort or a failed peer)", ctx_.rank);
    if (ctx_.asyncError) {
      weftResult_t e = ctx_.asyncError();
      if (e != weftSuccess) throw Error(e, "rank " + std::to_string(ctx_.rank) + ": communicator failed: " +
                                               weftGetErrorString(e));
    }
    for (auto& cur : cursors_) {
      if (cur.finished()) continue;
      const Step& st = (*cur.steps)[cur.step];
      const StepFifos& f = cur.fifos[cur.step];
      for (int i = 0; i < st.nRecv; i++)
        if (f.in[i].failed())
          raise(weftRemoteError, "rank %d: connection from rank %d failed", ctx_.rank, st.recvPeer[i]);
      for (int i = 0; i < st.nSend; i++)
        if (f.out[i].failed())
          raise(weftRemoteError, "rank %d: connection to rank %d failed", ctx_.rank, st.sendPeer[i]);
    }
    if (timeoutNs > 0 && nowNs() - lastProgress > timeoutNs) {
      std::string where;
      for (size_t c = 0; c < cursors_.size(); c++) {
        auto& cur = cursors_[c];
        if (cur.finished()) continue;
        where += " channel " + std::to_string(c) + " step " + std::to_string(cur.step) + ": " +
                 plan::describe((*cur.steps)[cur.step]) + ";";
      }
      const std::string why = ctx_.explainTimeout ? ctx_.explainTimeout() : std::string();
      raise(weftTimeout, "rank %d: %s made no progress for %ld ms (WEFT_TIMEOUT_MS), waiting at%s%s%s", ctx_.rank,
            plan::collName(plan_.coll), static_cast<long>(ctx_.timeoutMs), where.c_str(), why.empty() ? "" : " ",
            why.c_str());
    }
  }

  // Moves one piece of the current step, or the whole step when it touches
  // no FIFO. Returns false when it must wait for a peer.
  bool advance(ChannelCursor& cur) {
    const Step& st = (*cur.steps)[cur.step];
    const StepFifos& f = cur.fifos[cur.step];
    if (st.kind != plan::StepKind::Fifo) [[unlikely]] return runDirectSteps(cur);
    if (st.count == 0) {
      nextStep(cur);
      return true;
    }
    const bool usesFifo = st.nRecv || st.nSend;
    uint64_t n = st.count - cur.done;
    uint64_t piece = n;
    if (usesFifo) {
      plan::FifoGeometry g = FifoGeometry(f, st);
      if (slice_ && slice_ < g.slotBytes) g.slotBytes = slice_;
      piece = plan::pieceElems(g, fifoElem_);
      if (n > piece) n = piece;
    }
    const uint64_t bytes = n * fifoElem_;  // in the FIFOs
    const char* local = st.src != Buf::None ? base(st.src, st.bind) + (st.srcOff + cur.done) * elem_ : nullptr;
    char* dst = st.dst != Buf::None ? base(st.dst, st.bind) + (st.dstOff + cur.done) * elem_ : nullptr;
    if (userMemory_ && st.nRecv == 1 && !local && dst && !(st.flags & plan::kPostOp) && f.in[0].userMemory &&
        plan_.wire == plan::Wire::Native)
      offerLandings(cur, st, f.in[0], piece);

    const void* in[2] = {nullptr, nullptr};
    void* out[2] = {nullptr, nullptr};
    for (int i = 0; i < st.nRecv; i++) {
      uint64_t got = 0;
      in[i] = f.in[i].tryPeek(&got);
      if (!in[i] && f.in[i].progress && f.in[i].progress->tryProgress(bytes)) in[i] = f.in[i].tryPeek(&got);
      if (!in[i]) return blocked(cur, st.recvPeer[i], false, uint8_t(i));
      if (got != bytes)
        raise(weftInternalError,
              "rank %d: received %lu bytes from rank %d but the plan expects %lu (mismatched collective across "
              "ranks? check count/type/op/root on every rank)",
              ctx_.rank, static_cast<unsigned long>(got), st.recvPeer[i], static_cast<unsigned long>(bytes));
    }
    for (int i = 0; i < st.nSend; i++) {
      out[i] = f.out[i].tryAcquire();
      if (!out[i] && f.out[i].progress && f.out[i].progress->tryProgress(bytes)) out[i] = f.out[i].tryAcquire();
      if (!out[i]) return blocked(cur, st.sendPeer[i], true, uint8_t(2 + i));
    }

    const char* from = nullptr;  // the output goes out from the caller's memory
    bool landed = false;         // the input arrived in dst
    if (userMemory_) {
      if (const char* at = st.nRecv == 1 ? f.in[0].landedAt() : nullptr) {
        if (at != dst)
          raise(weftInternalError, "rank %d: a piece from rank %d landed outside the step's output", ctx_.rank,
                st.recvPeer[0]);
        landed = true;
      }
      if (st.nSend) from = sendSource(st, f.out[0], local, dst, bytes);
      // dst is about to be written: not while a send still reads it.
      const bool keepsDst = st.nRecv == 0 && from && from == dst;  // a plain send of dst itself
      if (dst && !landed && !keepsDst && sendingFrom(dst, n * elem_))
        return blocked(cur, st.nSend ? st.sendPeer[0] : -1, true, 2);
    }
    if (landed || from) computeInUserMemory(st, in, local, out, dst, n, landed, from);
    else if (plan_.wire == plan::Wire::Native) compute(st, in, local, out, dst, n);
    else computeWire(st, in, local, out, dst, n);

    if (from) {
      sent_->push_back({f.out[0].hdr, f.out[0].hdr->posted.load(std::memory_order_relaxed), from, bytes});
      f.out[0].postFrom(from, bytes);
    }
    for (int i = from ? 1 : 0; i < st.nSend; i++) f.out[i].post(bytes);
    for (int i = 0; i < st.nRecv; i++) f.in[i].release();
    cur.done += n;
    if (ctx_.state) ctx_.state->addBytes(bytes);
    if (cur.done >= st.count) nextStep(cur);
    return true;
  }

  // Direct and Barrier steps (src/exec/host/direct_steps.h): one, or a
  // group of them with streaming stores.
  bool runDirectSteps(ChannelCursor& cur) {
    if (!ctx_.direct) raise(weftInternalError, "rank %d: a direct plan step without peers' buffers", ctx_.rank);
    DirectSteps direct(*ctx_.direct, op_, elem_, ctx_.rank);
    uint64_t moved = 0;
    cur.step = direct.run(*cur.steps, cur.step, ctx_.streamStores, &moved);
    cur.done = 0;
    if (ctx_.state && moved) ctx_.state->addBytes(moved);
    return true;
  }

  // The inner poll loop with tracing on: times each piece and each wait,
  // and records an event per finished step.
  bool advanceTraced(ChannelCursor& cur) {
    if (clocks_.empty()) clocks_ = stepClocks(cursors_.size());
    const size_t c = static_cast<size_t>(&cur - cursors_.data());
    StepClock& clock = clocks_[c];
    bool moved = false;
    while (!cur.finished()) {
      const size_t step = cur.step;
      const int64_t t0 = nowNs();
      if (!clock.startNs) clock.startNs = t0;
      if (!advance(cur)) {
        clock.blocked(t0, cur.waitingOn);
        return moved;
      }
      const int64_t t1 = nowNs();
      clock.unblocked(t0);
      clock.moveNs += t1 - t0;
      moved = true;
      if (cur.step == step) continue;
      const Step& st = (*cur.steps)[step];
      if (st.count) traceStep(*ctx_.trace, ctx_.rank, ctx_.traceComm, int(c), uint32_t(step), st, fifoElem_, clock, t1);
      clock = StepClock{};
      clock.startNs = t1;
    }
    return moved;
  }

  static bool blocked(ChannelCursor& cur, int32_t peer, bool forSend, uint8_t fifo) {
    cur.waitingOn = fifo;
    cur.blockedOn = peer;
    cur.blockedSend = forSend;
    return false;
  }

  // The step's geometry comes from whichever FIFO it uses (all FIFOs of a
  // communicator share one geometry).
  static plan::FifoGeometry FifoGeometry(const StepFifos& f, const Step& st) {
    const FifoEnd& e = st.nRecv ? f.in[0] : f.out[0];
    plan::FifoGeometry g;
    g.slotBytes = e.geometry.slotBytes;
    g.nSlots = e.geometry.nSlots;
    return g;
  }

  void compute(const Step& st, const void* const in[2], const char* local, void* const out[2], char* dst,
               uint64_t n) {
    // The first output receives the result; the others are copies of it.
    void* first = st.nSend ? out[0] : dst;
    if (!first) raise(weftInternalError, "rank %d: plan step has no output: %s", ctx_.rank, plan::describe(st).c_str());
    // The caller's buffer as the one output: streamed past the cache
    // (HostExecContext::streamStores).
    if (ctx_.streamStores && !st.nSend && st.nRecv < 2) return reduceInto(dst, st, in, local, n, true);
    reduceInto(first, st, in, local, n);
    const size_t bytes = n * elem_;
    if (st.nSend && dst && dst != first) {
      if (ctx_.streamStores) kernels::copyStreaming(dst, first, bytes);
      else memcpy(dst, first, bytes);
    }
    for (int i = 1; i < st.nSend; i++) memcpy(out[i], first, bytes);
  }

  // A narrow wire format (plan::Wire): the received pieces are decoded to
  // float32, reduced in float32 with the local input, and the result is
  // rounded once on its way out. A step that also keeps the result keeps the
  // rounded value, the one its peers receive.
  void computeWire(const Step& st, const void* const in[2], const char* local, void* const out[2], char* dst,
                   uint64_t n) {
    const weftDataType_t narrow = plan_.wire == plan::Wire::Bf16 ? weftBfloat16 : weftFloat16;
    thread_local std::vector<float> decoded[2], result;
    const void* inF[2] = {nullptr, nullptr};
    for (int i = 0; i < st.nRecv; i++) {
      if (decoded[i].size() < n) decoded[i].resize(n);
      kernels::narrowToFloat(decoded[i].data(), in[i], n, narrow);
      inF[i] = decoded[i].data();
    }
    if (!st.nSend) {
      if (!dst) raise(weftInternalError, "rank %d: plan step has no output: %s", ctx_.rank, plan::describe(st).c_str());
      reduceInto(dst, st, inF, local, n);
      return;
    }
    if (result.size() < n) result.resize(n);
    reduceInto(result.data(), st, inF, local, n);
    kernels::floatToNarrow(out[0], result.data(), n, narrow);
    const size_t bytes = n * fifoElem_;
    for (int i = 1; i < st.nSend; i++) memcpy(out[i], out[0], bytes);
    if (dst) kernels::narrowToFloat(reinterpret_cast<float*>(dst), out[0], n, narrow);
  }

  // first = the step's inputs reduced in the plan's fixed order.
  // stream: write `first` with streaming stores (one or no received input).
  void reduceInto(void* first, const Step& st, const void* const in[2], const char* local, uint64_t n,
                  bool stream = false) {
    const unsigned pre = (st.flags & plan::kPreOp) ? unsigned(kernels::kApplyPre) : 0u;
    const unsigned post = (st.flags & plan::kPostOp) ? unsigned(kernels::kApplyPost) : 0u;
    void* const outs[1] = {first};
    auto transformTo = [&](const void* src, unsigned apply) {
      if (stream) kernels::transformStreaming(outs, 1, src, n, op_, apply);
      else kernels::transform(first, src, n, op_, apply);
    };
    switch (st.nRecv) {
      case 0:
        if (!local) raise(weftInternalError, "rank %d: plan step has no input: %s", ctx_.rank, plan::describe(st).c_str());
        transformTo(local, pre | post);
        break;
      case 1:
        if (!local) transformTo(in[0], post);
        else if (stream) kernels::reduceStreaming(outs, 1, in[0], local, n, op_, pre | post);
        else kernels::reduce(first, in[0], local, n, op_, pre | post);
        break;
      default:
        if (local) {
          kernels::reduce(first, in[0], in[1], n, op_, 0);
          kernels::reduce(first, first, local, n, op_, pre | post);
        } else {
          kernels::reduce(first, in[0], in[1], n, op_, post);
        }
        break;
    }
  }

  void nextStep(ChannelCursor& cur) {
    cur.step++;
    cur.done = 0;
  }

  // Whether a send still reads [at, at + bytes) of the caller's memory (any
  // send at all when bytes is 0); forgets the sends that are done.
  bool sendingFrom(const char* at, uint64_t bytes) {
    if (sent_->empty()) return false;
    std::erase_if(*sent_, [](const SentFromUser& s) {
      return static_cast<int32_t>(s.hdr->consumed.load(std::memory_order_acquire) - s.seq) > 0;
    });
    for (const SentFromUser& s : *sent_)
      if (bytes == 0 || (at < s.at + s.bytes && s.at < at + bytes)) return true;
    return false;
  }

  // A receive whose bytes only land in dst: offer the step's next pieces'
  // places in dst to the mover, so they arrive there instead of in slots.
  void offerLandings(const ChannelCursor& cur, const Step& st, const FifoEnd& in, uint64_t piece) {
    for (uint32_t j = 0; j < in.geometry.nSlots; j++) {
      const uint64_t start = cur.done + j * piece;
      if (start >= st.count) return;
      const uint64_t bytes = std::min(piece, st.count - start) * elem_;
      if (bytes < in.userMemory->minBytes) return;
      char* at = base(st.dst, st.bind) + (st.dstOff + start) * elem_;
      if (sendingFrom(at, bytes)) return;
      in.offerLanding(j, at, bytes);
    }
  }

  // Where the step's one output piece can go out from the caller's memory
  // instead of a slot: its local input for a plain send, else the kept
  // result. nullptr: through the slot.
  const char* sendSource(const Step& st, const FifoEnd& out, const char* local, const char* dst,
                         uint64_t bytes) const {
    if (plan_.wire != plan::Wire::Native || st.nSend != 1 || !out.userMemory || bytes < out.userMemory->minBytes)
      return nullptr;
    if (st.nRecv == 0) return local && st.flags == 0 ? local : nullptr;
    return dst;
  }

  // The piece when the mover reads from or wrote into the caller's memory:
  // `landed` (the input is already in dst) and/or `from` (the output goes
  // out from there, so it is computed there).
  void computeInUserMemory(const Step& st, const void* const in[2], const char* local, void* const out[2], char* dst,
                           uint64_t n, bool landed, const char* from) {
    const size_t bytes = n * elem_;
    if (landed) {
      for (int i = from ? 1 : 0; i < st.nSend; i++) memcpy(out[i], dst, bytes);
    } else if (st.nRecv == 0) {  // a plain send of local (in place, dst may be local itself)
      if (dst && dst != local) memcpy(dst, local, bytes);
    } else {
      reduceInto(dst, st, in, local, n);
    }
  }


 public:
  // Ends the mover's use of the caller's memory after a failed run.
  void abandonUserMemory() noexcept {
    if (!userMemory_) return;
    std::vector<FifoUserMemory*> seen;
    for (auto& cur : cursors_)
      for (const StepFifos& f : cur.fifos)
        for (const FifoEnd* e : {&f.in[0], &f.in[1], &f.out[0], &f.out[1]})
          if (e->userMemory && std::find(seen.begin(), seen.end(), e->userMemory) == seen.end()) {
            seen.push_back(e->userMemory);
            e->userMemory->abandonUserMemory();
          }
  }

 private:
  const plan::Plan& plan_;
  std::span<const BufferBinding> bindings_;
  char* scratch_;
  const kernels::RedOp& op_;
  const HostExecContext& ctx_;
  const uint32_t elem_;      // bytes of a buffer element
  const uint32_t fifoElem_;  // bytes of an element in the FIFOs (plan::Wire)
  const uint64_t slice_;  // piece bytes (0: the FIFO slot)
  std::span<ChannelCursor> cursors_;
  std::span<StepClock> clocks_;  // tracing only
  bool waitNoted_ = false;  // the diagnosis state shows a wait
  bool proxied_ = false;    // some FIFO of the plan is moved by a proxy (FifoProgress)
  bool userMemory_ = false; // some FIFO of the plan can use the caller's memory (FifoUserMemory)
  std::vector<SentFromUser>* sent_ = nullptr;
};

}  // namespace

void runHostPlan(const plan::Plan& plan, std::span<const BufferBinding> bindings, void* scratch,
                 const kernels::RedOp& op, const FifoLookup& fifos, const HostExecContext& ctx) {
  Runner r(plan, bindings, scratch, op, ctx);
  r.prepare(fifos);
  try {
    r.run();
  } catch (...) {
    r.abandonUserMemory();
    throw;
  }
}

}  // namespace weft
