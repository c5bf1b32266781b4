// Plans that only copy between this rank's own buffers: a one-rank
// communicator's collectives, and a group's sends to the rank itself. They
// need neither the interpreter nor the communicator's device stream (no FIFO
// or scratch is shared with another call), so the device executor queues
// them as plain copies on the caller's stream, as NCCL runs its one-rank
// calls: adjacent ranges merged into one copy, a range onto itself (in
// place) dropped. Pure: tested without a GPU (tests/devhost).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "algorithms/plan.h"
#include "src/exec/host/host_executor.h"
#include "src/kernels/reduce.h"

namespace weft::cuda {

struct LocalCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

// Whether step flags leave the values as they are under `op`: pre-scaling
// matters only for PreMulSum, the finalisation only for Avg over several ranks.
inline bool keepsValues(const plan::Step& s, const kernels::RedOp& op) {
  if ((s.flags & plan::kPreOp) && op.kind == kernels::OpKind::PreMulSum) return false;
  if ((s.flags & plan::kPostOp) && op.kind == kernels::OpKind::Avg && op.nranks != 1) return false;
  return true;
}

// Whether step `s` copies one of the rank's own buffers into its output
// with no peer, no scratch and no arithmetic under `op`.
inline bool isLocalCopy(const plan::Step& s, size_t nBindings, const kernels::RedOp& op) {
  return s.kind == plan::StepKind::Fifo && !s.nRecv && !s.nSend && s.dst == plan::Buf::Recv &&
         (s.src == plan::Buf::Send || s.src == plan::Buf::Recv) && keepsValues(s, op) && s.bind < nBindings;
}

// The copies `p` amounts to, in its order, or nothing when some step talks
// to a peer, uses scratch, computes, or is not a FIFO-kind step. Called on
// every device call: plans with peers are refused before anything is made.
inline std::optional<std::vector<LocalCopy>> localCopiesOf(const plan::Plan& p, std::span<const BufferBinding> b,
                                                           const kernels::RedOp& op) {
  if (p.wire != plan::Wire::Native || p.scratchElems) return std::nullopt;
  for (const plan::ChannelPlan& ch : p.channels)
    for (const plan::Step& s : ch.steps)
      if (!isLocalCopy(s, b.size(), op)) return std::nullopt;
  std::vector<LocalCopy> out;
  for (const plan::ChannelPlan& ch : p.channels)
    for (const plan::Step& s : ch.steps) {
      if (!s.count) continue;
      const char* base = static_cast<const char*>(s.src == plan::Buf::Send ? b[s.bind].send : b[s.bind].recv);
      char* dst = static_cast<char*>(b[s.bind].recv) + s.dstOff * p.elemSize;
      const char* src = base + s.srcOff * p.elemSize;
      const size_t bytes = s.count * p.elemSize;
      if (dst == src) continue;
      if (!out.empty()) {
        LocalCopy& last = out.back();
        if (static_cast<char*>(last.dst) + last.bytes == dst && static_cast<const char*>(last.src) + last.bytes == src) {
          last.bytes += bytes;
          continue;
        }
      }
      out.push_back({dst, src, bytes});
    }
  return out;
}

}  // namespace weft::cuda
