// The device low-latency protocol's data path (DevProto::kProtoLl): a piece
// crosses a FIFO slot as 8-byte lines, each carrying 4 bytes of data and
// the piece's flag in one store. Readers spin on their own lines, so the
// writer needs no fence and the reader no counter: the cost of a small
// piece is one store and one poll instead of fence + counter + poll +
// fence. Half of each slot is flags.
//
// Each thread takes groups of two lines (8 data bytes: whole elements of
// every type), waits until every input line of the group carries its flag,
// computes the group's elements exactly as computePiece does (combine(),
// the same rounding), and writes them to the plain output and, with the
// output flag, to every output slot. A partial last line carries zero
// padding.
#pragma once

#include <stdint.h>

#include "src/exec/cuda/device_compute.cuh"
#include "src/exec/cuda/device_layout.h"
#include "src/exec/cuda/device_portable.cuh"

namespace weft::cuda {

// Why an LL wait ended early.
enum LlStop : uint32_t { kLlOk = 0, kLlStopped = 1, kLlTimeout = 2 };

struct LlIo {
  const uint64_t* in[2];  // input slots (lines)
  uint32_t inFlag[2];     // the flag each input's lines must carry
  uint64_t* out[2];       // output slots (lines)
  uint32_t outFlag[2];
  int nOut;
};

WEFT_DEV uint64_t llLine(uint32_t data, uint32_t flag) { return (static_cast<uint64_t>(flag) << 32) | data; }
WEFT_DEV uint32_t llFlagOf(uint64_t line) { return static_cast<uint32_t>(line >> 32); }

// Waits until *p carries `flag` and returns its data in `data`. Bounded:
// ends on the abort flag, another CTA's stop, or the launch's timeout.
WEFT_DEV uint32_t llWait(const DevLaunch& L, const uint64_t* p, uint32_t flag, uint32_t& data) {
  uint64_t v = loadLine(p);
  if (llFlagOf(v) == flag) {
    data = static_cast<uint32_t>(v);
    return kLlOk;
  }
  const uint64_t start = nowNs();
  for (uint32_t spins = 0;; spins++) {
    pause(spins);
    v = loadLine(p);
    if (llFlagOf(v) == flag) {
      data = static_cast<uint32_t>(v);
      return kLlOk;
    }
    if (spins % 64 == 63) {
      if (loadFlag(L.abortFlag) || loadCounter(&L.status->code) != 0) return kLlStopped;
      if (L.timeoutNs && nowNs() - start > L.timeoutNs) return kLlTimeout;
    }
  }
}

// Elements [0, n) of an LL piece, over `nthreads` threads from `tid`.
// io supplies the local input and the op's flags (io.in/io.out unused).
template <class E, class Op>
WEFT_DEV uint32_t computePieceLl(const DevLaunch& L, const PieceIo<E>& io, const LlIo& ll,
                                 typename E::Store* dst, uint64_t n, uint64_t tid, uint64_t nthreads) {
  using S = typename E::Store;
  constexpr int K = 8 / sizeof(S);
  union Group {
    uint32_t w[2];
    S s[K];
  };
  const uint64_t lines = (n * sizeof(S) + 3) / 4;
  const bool raw = isRawCopy(io);
  for (uint64_t g = tid; 2 * g < lines; g += nthreads) {
    const int nl = 2 * g + 1 < lines ? 2 : 1;
    Group a, b, r;
    a.w[0] = a.w[1] = b.w[0] = b.w[1] = r.w[0] = r.w[1] = 0;
    for (int j = 0; j < nl; j++) {
      if (io.nIn > 0) {
        const uint32_t why = llWait(L, ll.in[0] + 2 * g + j, ll.inFlag[0], a.w[j]);
        if (why) return why;
      }
      if (io.nIn > 1) {
        const uint32_t why = llWait(L, ll.in[1] + 2 * g + j, ll.inFlag[1], b.w[j]);
        if (why) return why;
      }
    }
    const uint64_t e0 = g * K;
    const int cnt = n - e0 < uint64_t(K) ? static_cast<int>(n - e0) : K;
    for (int x = 0; x < cnt; x++) {
      S l{};
      if (io.local) l = io.local[e0 + x];
      r.s[x] = raw ? (io.nIn ? a.s[x] : l) : weft::kernels::storeElem<E>(combine<E, Op>(io, a.s[x], b.s[x], l));
      if (dst) dst[e0 + x] = r.s[x];
    }
    for (int o = 0; o < ll.nOut; o++)
      for (int j = 0; j < nl; j++) storeLine(ll.out[o] + 2 * g + j, llLine(r.w[j], ll.outFlag[o]));
  }
  return kLlOk;
}

}  // namespace weft::cuda
