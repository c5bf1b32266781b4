#include "src/exec/host/direct_steps.h"

#include <algorithm>
#include <cstring>

#include "src/kernels/streaming.h"
#include "src/util/error.h"

namespace weft {

using plan::Buf;
using plan::Step;

size_t DirectSteps::run(const std::vector<Step>& steps, size_t i, bool stream, uint64_t* moved) {
  const Step& st = steps[i];
  if (st.kind == plan::StepKind::Barrier) {
    access_.barrier();
    return i + 1;
  }
  size_t next = i + 1;
  if (stream && st.count) {
    next = runGroup(steps, i);
  } else {
    runOne(st);
  }
  *moved += st.count * elem_ * (next - i);
  if (access_.afterStep) access_.afterStep();
  return next;
}

// rank's buffer b at element off, as mapped here.
char* DirectSteps::at(int rank, Buf b, uint64_t off, const Step& st) const {
  if (rank < 0 || size_t(rank) >= access_.buffers.size() || (b != Buf::Send && b != Buf::Recv))
    raise(weftInternalError, "rank %d: bad direct step %s", rank_, plan::describe(st).c_str());
  const BufferBinding& bb = access_.buffers[size_t(rank)];
  return static_cast<char*>(b == Buf::Send ? const_cast<void*>(bb.send) : bb.recv) + off * elem_;
}

// dst = a OP pre(b), or a copy/transform of a when there is no b. An
// accumulating step (a is dst) never pre-scales a.
void DirectSteps::compute(char* dst, const char* a, const char* b, uint64_t count, uint8_t flags, bool accumulate) {
  const unsigned pre = (flags & plan::kPreOp) ? unsigned(kernels::kApplyPre) : 0u;
  const unsigned post = (flags & plan::kPostOp) ? unsigned(kernels::kApplyPost) : 0u;
  const unsigned preA = accumulate ? 0 : pre;
  if (!b) {
    if (a != dst || preA || post) kernels::transform(dst, a, count, op_, preA | post);
  } else if (preA && op_.kind == kernels::OpKind::PreMulSum) {
    // reduce() pre-scales its second input only.
    kernels::transform(dst, a, count, op_, kernels::kApplyPre);
    kernels::reduce(dst, dst, b, count, op_, pre | post);
  } else {
    kernels::reduce(dst, a, b, count, op_, pre | post);
  }
}

void DirectSteps::runOne(const Step& st) {
  if (st.count == 0) return;
  char* dst = at(st.dstRank, st.dst, st.dstOff, st);
  const bool accumulate = st.srcRank[0] < 0;
  const char* a = accumulate ? dst : at(st.srcRank[0], st.src, st.srcOff, st);
  const char* b = st.srcRank[1] >= 0 ? at(st.srcRank[1], st.src, st.srcOff, st) : nullptr;
  compute(dst, a, b, st.count, st.flags, accumulate);
}

size_t DirectSteps::runGroup(const std::vector<Step>& steps, size_t first) {
  const Step& st = steps[first];
  auto sameRange = [&](const Step& s) {
    return s.kind == plan::StepKind::Direct && s.count == st.count && s.dstRank == st.dstRank && s.dst == st.dst &&
           s.dstOff == st.dstOff;
  };
  auto copiesRange = [&](const Step& s) {
    return s.kind == plan::StepKind::Direct && s.count == st.count && s.srcRank[0] == st.dstRank &&
           s.srcRank[1] < 0 && s.src == st.dst && s.srcOff == st.dstOff && s.flags == 0;
  };
  size_t end = first + 1;
  while (end < steps.size() && sameRange(steps[end]) && steps[end].srcRank[0] < 0 && steps[end].srcRank[1] >= 0)
    end++;
  constexpr int kMaxOut = 8;  // further copies run as steps of their own
  char* outs[kMaxOut];
  int nOut = 0;
  outs[nOut++] = at(st.dstRank, st.dst, st.dstOff, st);
  const size_t copies = end;
  for (; end < steps.size() && nOut < kMaxOut && copiesRange(steps[end]); end++)
    outs[nOut++] = at(steps[end].dstRank, steps[end].dst, steps[end].dstOff, steps[end]);
  streamGroup(steps, first, copies, outs, nOut);
  return end;
}

// Steps [first, copies) compute the range block by block; each block then
// goes to every output in outs.
void DirectSteps::streamGroup(const std::vector<Step>& steps, size_t first, size_t copies, char* const* outs,
                              int nOut) {
  const Step& st = steps[first];
  if (copies == first + 1 && st.srcRank[0] >= 0 && st.srcRank[1] < 0 && st.flags == 0) {
    const char* src = at(st.srcRank[0], st.src, st.srcOff, st);  // no arithmetic: straight from the source
    for (int d = 0; d < nOut; d++)
      if (outs[d] != src) kernels::copyStreamingUnfenced(outs[d], src, st.count * elem_);
    return kernels::streamFence();
  }
  thread_local std::vector<char> block;
  const uint64_t per = std::max<uint64_t>(1, kernels::kStreamBlockBytes / elem_);
  if (block.size() < per * elem_) block.resize(per * elem_);
  char* blk = block.data();
  for (uint64_t done = 0; done < st.count; done += per) {
    const uint64_t n = std::min(per, st.count - done), off = done * elem_;
    for (size_t i = first; i < copies; i++) {
      const Step& s = steps[i];
      const bool accumulate = s.srcRank[0] < 0;
      if (accumulate && i == first) memcpy(blk, outs[0] + off, n * elem_);  // the output's values so far
      const char* a = accumulate ? blk : at(s.srcRank[0], s.src, s.srcOff, s) + off;
      const char* b = s.srcRank[1] >= 0 ? at(s.srcRank[1], s.src, s.srcOff, s) + off : nullptr;
      compute(blk, a, b, n, s.flags, accumulate);
    }
    for (int d = 0; d < nOut; d++) kernels::copyStreamingUnfenced(outs[d] + off, blk, n * elem_);
  }
  kernels::streamFence();
}

}  // namespace weft
