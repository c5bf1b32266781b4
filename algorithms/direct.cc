#include "algorithms/direct.h"

#include <algorithm>

#include "algorithms/partition.h"
#include "src/util/error.h"

namespace weft::algo {
namespace {

using plan::Buf;
using plan::Coll;

// Shares start on 64-byte boundaries where the element size allows, so no
// two ranks write one cache line of an output.
Range share(uint64_t count, uint32_t elemSize, int nranks, int rank) {
  const uint64_t unit = (elemSize <= 64 && 64 % elemSize == 0) ? 64 / elemSize : 1;
  return alignedPart(count, uint64_t(nranks), uint64_t(rank), unit);
}

// dst@rank [dstOff, +len) = reduction of every rank's src [srcOff, +len),
// own input first.
void reduceAll(std::vector<plan::Step>& out, const CollArgs& a, uint64_t srcOff, uint64_t dstOff, uint64_t len) {
  const int n = a.nranks, r = a.rank;
  if (n == 1) {
    out.push_back(plan::direct(r, -1, Buf::Send, srcOff, r, Buf::Recv, dstOff, len, plan::kPreOp | plan::kPostOp));
    return;
  }
  for (int k = 1; k < n; k++) {
    const uint8_t flags = plan::kPreOp | (k == n - 1 ? plan::kPostOp : 0);
    out.push_back(plan::direct(k == 1 ? r : -1, (r + k) % n, Buf::Send, srcOff, r, Buf::Recv, dstOff, len, flags));
  }
}

void allReduce(std::vector<plan::Step>& out, const CollArgs& a, uint64_t chunk) {
  const Range mine = share(a.count, a.elemSize, a.nranks, a.rank);
  for (uint64_t at = 0; at < mine.count; at += chunk) {
    const uint64_t len = std::min(chunk, mine.count - at), off = mine.off + at;
    reduceAll(out, a, off, off, len);
    for (int k = 1; k < a.nranks; k++) {
      const int q = (a.rank + k) % a.nranks;
      out.push_back(plan::direct(a.rank, -1, Buf::Recv, off, q, Buf::Recv, off, len));
    }
  }
}

void reduceScatter(std::vector<plan::Step>& out, const CollArgs& a, uint64_t chunk) {
  for (uint64_t at = 0; at < a.count; at += chunk)
    reduceAll(out, a, uint64_t(a.rank) * a.count + at, at, std::min(chunk, a.count - at));
}

void allGather(std::vector<plan::Step>& out, const CollArgs& a, uint64_t chunk) {
  for (int k = 0; k < a.nranks; k++) {
    const int q = (a.rank + k) % a.nranks;
    for (uint64_t at = 0; at < a.count; at += chunk)
      out.push_back(plan::direct(q, -1, Buf::Send, at, a.rank, Buf::Recv, uint64_t(q) * a.count + at,
                                 std::min(chunk, a.count - at)));
  }
}

}  // namespace

bool directSupports(Coll c) { return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::AllGather; }

plan::Plan buildDirect(const CollArgs& a) {
  validateArgs(a);
  if (!directSupports(a.coll))
    raise(weftInvalidArgument, "buildDirect: %s has no single-copy plan", plan::collName(a.coll));
  plan::Plan p = emptyPlan(a);
  p.channels.assign(1, {});
  auto& steps = p.channels[0].steps;
  // A smaller slot (the tests' tiny geometries) makes smaller chunks.
  const uint64_t chunkBytes = a.geometry.slotBytes ? std::min(kDirectChunkBytes, a.geometry.slotBytes) : kDirectChunkBytes;
  const uint64_t chunk = std::max<uint64_t>(1, chunkBytes / a.elemSize);
  steps.push_back(plan::barrier());
  switch (a.coll) {
    case Coll::AllReduce: allReduce(steps, a, chunk); break;
    case Coll::ReduceScatter: reduceScatter(steps, a, chunk); break;
    default: allGather(steps, a, chunk); break;
  }
  steps.push_back(plan::barrier());
  return p;
}

}  // namespace weft::algo
