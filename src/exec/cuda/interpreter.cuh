// The plan interpreter's body, compiled by nvcc for the kernel
// (device_executor.cu) and by the host compiler for the devemu tests
// (tests/devemu), through device_portable.cuh.
//
// Semantics mirror src/exec/host/host_executor.cc: each channel runs its
// steps in order; a step that touches FIFOs is streamed in pieces of
// min(slice, slot) bytes; for each piece every input slot must be posted
// and every output slot free, then all threads compute
// ((in0 OP in1) OP pre(local)) [post] into every output, then the outputs
// are posted and the inputs freed.
//
// A CTA serves channels cta, cta + nCtas, ... and runs whichever of them has
// a piece ready, so a channel never waits behind another one of its CTA
// (which could deadlock: the peer may serve them in another order).
// Thread 0 does all waiting and posting; the others only compute.
//
// Credits are cached: a FIFO end's own counter (the producer's posted, the
// consumer's consumed) is read once per step and then kept; the other end's
// counter is re-read only when the cached value says "not ready". The
// consumer polls `posted`, in its own memory (p2p: the receiving GPU's);
// the producer, when its cached credit runs out, reads the FIFO's credit
// word, which the consumer writes into the producer's memory next to
// `consumed` (DevFifo::credit; host-memory FIFOs have none and the
// producer reads `consumed`). So neither end polls the other's memory.
// Posting costs one system fence per piece: slot sizes, fence, counters.
//
// With the LL protocol (DevLaunch::proto, device_ll.cuh) a piece's lines
// carry their own flags: thread 0 takes an input as ready when the first
// line of its piece has the flag, every thread then waits for its own
// lines, and posting is the lines themselves (the posted counter is still
// advanced, without a fence, to count pieces; consumed still returns
// credit).
#pragma once

#include <stdint.h>

#include "src/exec/cuda/device_compute.cuh"
#include "src/exec/cuda/device_layout.h"
#include "src/exec/cuda/device_ll.cuh"
#include "src/exec/cuda/device_portable.cuh"
#include "weft/weft.h"

namespace weft::cuda::interp {

// Mirrors plan::Buf (Buf::None = 0, Send, Recv, Scratch) and StepFlags.
constexpr uint8_t kBufSend = 1, kBufRecv = 2, kBufScratch = 3;
constexpr uint8_t kFlagPre = 1, kFlagPost = 2;
constexpr uint32_t kCodeTimeout = weftTimeout, kCodeRemote = weftRemoteError, kCodeInternal = weftInternalError;
// How often (in unsuccessful polls) thread 0 looks at the abort flag, the
// FIFOs' failed flags and the clock.
constexpr uint32_t kChecksEvery = 64;

// One channel of the CTA: where it is, and the cached counters of its
// current step's FIFOs (valid when `loaded`).
struct ChanCursor {
  uint32_t step;
  uint32_t loaded;
  uint64_t done;     // elements of the step already moved
  uint32_t inC[2];   // consumed (own) of each input
  uint32_t inP[2];   // posted, as last read
  uint32_t outP[2];  // posted (own) of each output
  uint32_t outC[2];  // consumed, as last read
};

// The CTA's shared memory.
struct CtaShared {
  ChanCursor cur[kMaxChannelsPerCta];
  char* inSlot[2];
  char* outSlot[2];
  uint64_t n;      // elements of the chosen piece
  int32_t pick;    // the chosen channel (index into cur), -1: all done
  uint32_t stop;   // non-zero: stop (code reported)
  // Non-zero: an LL wait ended mid-piece. Written only between the two
  // barriers around a piece (sh.stop is rewritten by thread 0 while slower
  // threads may still read the last piece's value).
  uint32_t llStop;
  uint32_t rr;     // where the next search starts (fairness)
};

WEFT_DEV int ownedChannels(const DevLaunch& L, const CtaCtx& c) {
  return L.nChannels > c.cta ? (L.nChannels - c.cta + c.nCtas - 1) / c.nCtas : 0;
}
WEFT_DEV int channelOf(const CtaCtx& c, int local) { return c.cta + local * c.nCtas; }

WEFT_DEV char* bufferBase(const DevLaunch& L, uint8_t which, uint16_t bind) {
  const DevBinding* b = L.bindingTable ? L.bindingTable : L.bindings;
  switch (which) {
    case kBufSend: return static_cast<char*>(const_cast<void*>(b[bind].send));
    case kBufRecv: return static_cast<char*>(b[bind].recv);
    case kBufScratch: return static_cast<char*>(L.scratch);
    default: return nullptr;
  }
}

WEFT_DEV uint32_t reportStop(const DevLaunch& L, uint32_t code, int channel, int step, int detail) {
  DevStatus* s = L.status;
  storeStatus(&s->channel, channel);
  storeStatus(&s->step, step);
  storeStatus(&s->detail, detail);
  fenceSystem();
  storeStatus(&s->code, code);
  fenceSystem();
  return code;
}

// Elements per piece of a step (all of it when it uses no FIFO).
WEFT_DEV uint64_t pieceElemsOf(const DevLaunch& L, const DevStep& st) {
  if (!st.nRecv && !st.nSend) return st.count;
  const DevFifo& f = L.fifos[st.nRecv ? st.in[0] : st.out[0]];
  const uint64_t room = L.proto == kProtoLl ? f.slotBytes / 2 : f.slotBytes;  // LL: half of a line is flag
  const uint64_t slice = L.sliceBytes && L.sliceBytes < room ? L.sliceBytes : room;
  const uint64_t piece = slice / L.elemSize;
  return piece ? piece : 1;
}

// Where the producer learns what the consumer freed: its own memory when
// the FIFO has a credit word.
WEFT_DEV uint32_t loadCredit(const DevFifo& f) { return loadCounter(f.credit ? f.credit : f.consumed); }

// The consumer frees a slot: `consumed` (what host movers and the FIFO's
// accounting read) and the producer's credit word.
WEFT_DEV void storeConsumed(const DevFifo& f, uint32_t v) {
  storeCounter(f.consumed, v);
  if (f.credit) storeCounter(f.credit, v);
}

// The step's own counters, read once when the channel enters it; the other
// end's are set to "not ready" so that the first check reads them.
WEFT_DEV void loadCounters(const DevLaunch& L, const DevStep& st, ChanCursor& cc) {
  for (int i = 0; i < st.nRecv; i++) {
    cc.inC[i] = loadCounter(L.fifos[st.in[i]].consumed);
    cc.inP[i] = cc.inC[i];
  }
  for (int i = 0; i < st.nSend; i++) {
    const DevFifo& f = L.fifos[st.out[i]];
    cc.outP[i] = loadCounter(f.posted);
    cc.outC[i] = cc.outP[i] - f.nSlots;
  }
  cc.loaded = 1;
}

// Thread 0, LL: an input is ready when the first line of its piece carries
// the piece's flag (counter + 1); an output when the consumer gave credit.
WEFT_DEV uint32_t tryPieceLl(const DevLaunch& L, const DevStep& st, ChanCursor& cc, CtaShared& sh) {
  for (int i = 0; i < st.nRecv; i++) {
    const DevFifo& f = L.fifos[st.in[i]];
    char* slot = f.data + (cc.inC[i] % f.nSlots) * f.slotBytes;
    if (cc.inP[i] == cc.inC[i]) {
      if (llFlagOf(loadLine(reinterpret_cast<const uint64_t*>(slot))) != cc.inC[i] + 1) return 0;
      cc.inP[i] = cc.inC[i] + 1;  // known ready until consumed
    }
    sh.inSlot[i] = slot;
  }
  for (int i = 0; i < st.nSend; i++) {
    const DevFifo& f = L.fifos[st.out[i]];
    if (cc.outP[i] - cc.outC[i] >= f.nSlots) {
      cc.outC[i] = loadCredit(f);
      if (cc.outP[i] - cc.outC[i] >= f.nSlots) return 0;
    }
    sh.outSlot[i] = f.data + (cc.outP[i] % f.nSlots) * f.slotBytes;
  }
  return 1;
}

// Thread 0: is the channel's next piece (n elements) ready? 0 when not,
// 1 when ready (slots in sh), else a stop code (already reported).
WEFT_DEV uint32_t tryPiece(const DevLaunch& L, const DevStep& st, ChanCursor& cc, CtaShared& sh, int channel,
                           uint64_t n) {
  if (!cc.loaded) loadCounters(L, st, cc);
  if (L.proto == kProtoLl) return tryPieceLl(L, st, cc, sh);
  bool fresh = false;
  for (int i = 0; i < st.nRecv; i++) {
    if (cc.inP[i] != cc.inC[i]) continue;
    cc.inP[i] = loadCounter(L.fifos[st.in[i]].posted);
    if (cc.inP[i] == cc.inC[i]) return 0;
    fresh = true;
  }
  for (int i = 0; i < st.nSend; i++) {
    const DevFifo& f = L.fifos[st.out[i]];
    if (cc.outP[i] - cc.outC[i] < f.nSlots) continue;
    cc.outC[i] = loadCredit(f);
    if (cc.outP[i] - cc.outC[i] >= f.nSlots) return 0;
  }
  if (fresh) fenceSystem();  // the slots' data and sizes after the counter that published them
  const uint64_t bytes = n * L.elemSize;
  for (int i = 0; i < st.nRecv; i++) {
    const DevFifo& f = L.fifos[st.in[i]];
    const uint32_t slot = cc.inC[i] % f.nSlots;
    const uint64_t got = loadSize(&f.sizes[slot]);
    if (got != bytes) return reportStop(L, kCodeInternal, channel, static_cast<int>(cc.step), static_cast<int>(got));
    sh.inSlot[i] = f.data + slot * f.slotBytes;
  }
  for (int i = 0; i < st.nSend; i++) {
    const DevFifo& f = L.fifos[st.out[i]];
    sh.outSlot[i] = f.data + (cc.outP[i] % f.nSlots) * f.slotBytes;
  }
  return 1;
}

// Thread 0, while no channel is ready: the reasons to stop waiting.
WEFT_DEV uint32_t checkStop(const DevLaunch& L, const CtaCtx& c, CtaShared& sh, int nOwned, uint64_t start) {
  for (int k = 0; k < nOwned; k++) {
    const ChanCursor& cc = sh.cur[k];
    const DevChannel ch = L.channels[channelOf(c, k)];
    if (cc.step >= ch.nSteps) continue;
    const DevStep& st = L.steps[ch.firstStep + cc.step];
    bool failed = false;
    for (int i = 0; i < st.nRecv; i++) failed |= loadCounter(L.fifos[st.in[i]].failed) != 0;
    for (int i = 0; i < st.nSend; i++) failed |= loadCounter(L.fifos[st.out[i]].failed) != 0;
    if (failed) return reportStop(L, kCodeRemote, channelOf(c, k), static_cast<int>(cc.step), -1);
  }
  if (loadFlag(L.abortFlag)) return reportStop(L, kCodeRemote, c.cta, -1, -1);
  if (loadCounter(&L.status->code) != 0) return kCodeRemote;  // another CTA stopped
  if (L.timeoutNs && nowNs() - start > L.timeoutNs) {
    // Name the first channel still waiting.
    for (int k = 0; k < nOwned; k++)
      if (sh.cur[k].step < L.channels[channelOf(c, k)].nSteps)
        return reportStop(L, kCodeTimeout, channelOf(c, k), static_cast<int>(sh.cur[k].step), -1);
    return reportStop(L, kCodeTimeout, c.cta, -1, -1);
  }
  return 0;
}

// Thread 0: picks the next piece of any of the CTA's channels, waiting
// until one is ready. Sets sh.pick (-1 when every channel is finished).
WEFT_DEV uint32_t choosePiece(const DevLaunch& L, const CtaCtx& c, CtaShared& sh, int nOwned) {
  uint64_t start = 0;
  for (uint32_t spins = 0;; spins++) {
    bool pending = false;
    for (int j = 0; j < nOwned; j++) {
      const int k = static_cast<int>((sh.rr + j) % nOwned);
      ChanCursor& cc = sh.cur[k];
      const DevChannel ch = L.channels[channelOf(c, k)];
      while (cc.step < ch.nSteps && L.steps[ch.firstStep + cc.step].count == 0) cc.step++;
      if (cc.step >= ch.nSteps) continue;
      pending = true;
      const DevStep& st = L.steps[ch.firstStep + cc.step];
      const uint64_t left = st.count - cc.done;
      const uint64_t piece = pieceElemsOf(L, st);
      const uint64_t n = left < piece ? left : piece;
      const uint32_t r = (st.nRecv || st.nSend) ? tryPiece(L, st, cc, sh, channelOf(c, k), n) : 1;
      if (r == 1) {
        sh.pick = k;
        sh.n = n;
        sh.rr = static_cast<uint32_t>(k + 1);
        return 0;
      }
      if (r) return r;
    }
    if (!pending) {
      sh.pick = -1;
      return 0;
    }
    if (spins == 0) start = nowNs();
    if (spins % kChecksEvery == kChecksEvery - 1) {
      const uint32_t r = checkStop(L, c, sh, nOwned, start);
      if (r) return r;
    }
    pause(spins);
  }
}

// Thread 0: publish the piece's outputs (sizes, one fence, counters), free
// its inputs, advance the channel.
WEFT_DEV void finishPiece(const DevLaunch& L, const DevStep& st, ChanCursor& cc, uint64_t n) {
  const uint64_t bytes = n * L.elemSize;
  const bool simple = L.proto != kProtoLl;  // LL lines published themselves
  for (int i = 0; simple && i < st.nSend; i++) {
    const DevFifo& f = L.fifos[st.out[i]];
    storeSize(&f.sizes[cc.outP[i] % f.nSlots], bytes);
  }
  if (st.nSend && simple) fenceSystem();  // the CTA's slot writes (ordered by ctaSync) and the sizes first
  for (int i = 0; i < st.nSend; i++) storeCounter(L.fifos[st.out[i]].posted, ++cc.outP[i]);
  // The slots' reads are complete (their values were used); no fence needed.
  for (int i = 0; i < st.nRecv; i++) storeConsumed(L.fifos[st.in[i]], ++cc.inC[i]);
  cc.done += n;
  if (cc.done == st.count) {
    cc.step++;
    cc.done = 0;
    cc.loaded = 0;
  }
}

// Every thread, LL: the piece's lines; a wait that ends early is reported
// and stops the CTA (sh.llStop) before the piece is posted.
template <class E, class Op>
WEFT_DEV void runPieceLl(const DevLaunch& L, const CtaCtx& c, CtaShared& sh, const PieceIo<E>& io,
                         typename E::Store* dst, const DevStep& st) {
  const ChanCursor& cc = sh.cur[sh.pick];
  LlIo ll;
  for (int i = 0; i < 2; i++) {
    ll.in[i] = reinterpret_cast<const uint64_t*>(sh.inSlot[i]);
    ll.out[i] = reinterpret_cast<uint64_t*>(sh.outSlot[i]);
    ll.inFlag[i] = cc.inC[i] + 1;
    ll.outFlag[i] = cc.outP[i] + 1;
  }
  ll.nOut = st.nSend;
  const uint32_t why = computePieceLl<E, Op>(L, io, ll, dst, sh.n, static_cast<uint64_t>(c.tid),
                                            static_cast<uint64_t>(c.nThreads));
  if (why == kLlOk) return;
  const int channel = channelOf(c, sh.pick);
  const uint32_t code = why == kLlTimeout ? reportStop(L, kCodeTimeout, channel, static_cast<int>(cc.step), -1)
                        : loadFlag(L.abortFlag) ? reportStop(L, kCodeRemote, channel, static_cast<int>(cc.step), -1)
                                                : kCodeRemote;
  storeStatus(&sh.llStop, code);
}

// Every thread: the piece sh.pick chose.
template <class E, class Op>
WEFT_DEV void runPiece(const DevLaunch& L, const CtaCtx& c, CtaShared& sh, typename E::Acc scale) {
  using S = typename E::Store;
  const ChanCursor& cc = sh.cur[sh.pick];
  const DevChannel ch = L.channels[channelOf(c, sh.pick)];
  const DevStep& st = L.steps[ch.firstStep + cc.step];
  char* srcBase = bufferBase(L, st.src, st.bind);
  char* dstBase = bufferBase(L, st.dst, st.bind);
  PieceIo<E> io;
  io.nIn = st.nRecv;
  io.in[0] = reinterpret_cast<const S*>(sh.inSlot[0]);
  io.in[1] = reinterpret_cast<const S*>(sh.inSlot[1]);
  io.local = srcBase ? reinterpret_cast<const S*>(srcBase + (st.srcOff + cc.done) * L.elemSize) : nullptr;
  io.nOut = 0;
  for (int i = 0; i < st.nSend; i++) io.out[io.nOut++] = reinterpret_cast<S*>(sh.outSlot[i]);
  if (dstBase) io.out[io.nOut++] = reinterpret_cast<S*>(dstBase + (st.dstOff + cc.done) * L.elemSize);
  io.pre = (st.flags & kFlagPre) && L.opKind == kOpPreMulSum && (io.local != nullptr);
  io.post = (st.flags & kFlagPost) && L.opKind == kOpAvg;
  io.native = L.arith == kArithNative;
  io.scale = scale;
  io.nranks = L.nranks;
  if (L.proto == kProtoLl)
    return runPieceLl<E, Op>(L, c, sh, io, dstBase ? io.out[io.nOut - 1] : nullptr, st);
  computePiece<E, Op>(io, sh.n, static_cast<uint64_t>(c.tid), static_cast<uint64_t>(c.nThreads));
}

// One CTA of the interpreter (every thread of it calls this).
template <class E, class Op>
WEFT_DEV void interpretCta(const DevLaunch& L, CtaShared& sh, const CtaCtx& c) {
  using S = typename E::Store;
  const int nOwned = ownedChannels(L, c);
  typename E::Acc scale{};
  if (L.opKind == kOpPreMulSum) {
    S s;
    memcpy(&s, L.scalar, sizeof(S));
    scale = weft::kernels::loadElem<E>(s);
  }
  if (c.tid == 0) {
    for (int k = 0; k < nOwned; k++) sh.cur[k] = ChanCursor{};
    sh.rr = 0;
    sh.llStop = 0;
  }
  for (;;) {
    if (c.tid == 0) sh.stop = choosePiece(L, c, sh, nOwned);
    ctaSync(c);
    if (sh.stop || sh.pick < 0) return;
    runPiece<E, Op>(L, c, sh, scale);
    ctaSync(c);
    if (sh.llStop) return;  // an LL wait ended early
    if (c.tid == 0) {
      ChanCursor& cc = sh.cur[sh.pick];
      const DevChannel ch = L.channels[channelOf(c, sh.pick)];
      finishPiece(L, L.steps[ch.firstStep + cc.step], cc, sh.n);
    }
  }
}

}  // namespace weft::cuda::interp
