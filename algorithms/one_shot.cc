#include "algorithms/one_shot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/collectives.h"

namespace weft::algo {

using plan::Buf;
using plan::ChannelPlan;
using plan::Coll;
using plan::kPostOp;
using plan::kPreOp;
using plan::Plan;

namespace {

void push(ChannelPlan& ch, plan::Step s) {
  if (s.count > 0) ch.steps.push_back(s);
}

// Reducing collectives: this rank's own contribution first (pre-scaled),
// then every peer's received piece reduced into it, the last one finalised.
void reduceRound(ChannelPlan& ch, const CollArgs& a, uint64_t srcOff, uint64_t dstOff, uint64_t len) {
  push(ch, plan::copy(Buf::Send, srcOff, Buf::Recv, dstOff, len, kPreOp));
  const int last = a.rank == a.nranks - 1 ? a.nranks - 2 : a.nranks - 1;
  for (int j = 0; j < a.nranks; j++)
    if (j != a.rank)
      push(ch, plan::recvReduceCopy(j, Buf::Recv, dstOff, Buf::Recv, dstOff, len, j == last ? kPostOp : 0));
}

void sendToAll(ChannelPlan& ch, const CollArgs& a, uint64_t off, uint64_t len, uint8_t flags) {
  for (int d = 1; d < a.nranks; d++) push(ch, plan::send((a.rank + d) % a.nranks, Buf::Send, off, len, flags));
}

// One round: the piece [off, off+len) of each rank's contribution.
void round(ChannelPlan& ch, const CollArgs& a, uint64_t off, uint64_t len) {
  const int r = a.rank, n = a.nranks;
  const uint64_t count = a.count;
  switch (a.coll) {
    case Coll::AllReduce:
      sendToAll(ch, a, off, len, kPreOp);
      reduceRound(ch, a, off, off, len);
      return;
    case Coll::ReduceScatter:
      for (int d = 1; d < n; d++) {
        const int q = (r + d) % n;
        push(ch, plan::send(q, Buf::Send, uint64_t(q) * count + off, len, kPreOp));
      }
      reduceRound(ch, a, uint64_t(r) * count + off, off, len);
      return;
    case Coll::AllGather:
      sendToAll(ch, a, off, len, 0);
      push(ch, plan::copy(Buf::Send, off, Buf::Recv, uint64_t(r) * count + off, len));
      for (int j = 0; j < n; j++)
        if (j != r) push(ch, plan::recv(j, Buf::Recv, uint64_t(j) * count + off, len));
      return;
    case Coll::Broadcast:
      if (r != a.root) {
        push(ch, plan::recv(a.root, Buf::Recv, off, len));
        return;
      }
      sendToAll(ch, a, off, len, 0);
      push(ch, plan::copy(Buf::Send, off, Buf::Recv, off, len));
      return;
    case Coll::Reduce:
      if (r != a.root) {
        push(ch, plan::send(a.root, Buf::Send, off, len, kPreOp));
        return;
      }
      reduceRound(ch, a, off, off, len);
      return;
    default: return;
  }
}

// One host only: the protocol it runs under reads peers' memory.
CostTerms oneShotCost(Coll c, const CostInputs& in, double B) {
  if (std::clamp(in.nHosts, 1, in.nranks) > 1) return {std::numeric_limits<double>::infinity(), 0};
  const double n = std::max(in.nranks, 1);
  // Bytes each rank reads from its peers; LL lines carry 56 payload bytes in 64.
  double read = 0;
  switch (c) {
    case Coll::AllReduce:
    case Coll::Reduce: read = (n - 1) * B; break;
    case Coll::ReduceScatter:
    case Coll::AllGather: read = (n - 1) / n * B; break;
    default: read = B; break;
  }
  // Latency: half a FIFO hop (a peer's data is one line per 56 bytes, polled
  // in place, where a hop moves a slot, a counter and a doorbell ring).
  // Bytes: twice the lines read, since the line-by-line copies (into the
  // region, then out of every region, the own one included) run at about
  // half the speed of the FIFOs' bulk copies: 2 processes, 64 KB AllReduce,
  // 32 us against the ring's 17 us on the 2-core development machine.
  return {in.intra.latencyUs / 2, 2 * read * 64.0 / 56.0 / linkBytesPerUs(in)};
}

std::array<bool, plan::kNumColls> oneShotCollectives() {
  std::array<bool, plan::kNumColls> s{};
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce})
    s[static_cast<int>(c)] = true;
  return s;
}

}  // namespace

Plan buildOneShot(const CollArgs& a) {
  validateArgs(a);
  Plan p = emptyPlan(a);
  if (a.count == 0) return p;
  ChannelPlan ch;
  if (a.nranks == 1) {
    const uint8_t flags = plan::collInfo(a.coll).reduces ? (kPreOp | kPostOp) : 0;
    push(ch, plan::copy(Buf::Send, 0, Buf::Recv, 0, a.count, flags));
  } else {
    const uint64_t piece = pieceElems(a.geometry, a.elemSize);
    for (uint64_t off = 0; off < a.count; off += piece) round(ch, a, off, std::min(piece, a.count - off));
  }
  p.channels.push_back(std::move(ch));
  return p;
}

AlgoInfo oneShotAlgo() { return AlgoInfo{kOneShotName, oneShotCollectives(), buildOneShot, oneShotCost, nullptr}; }

std::optional<AlgoId> oneShotId() {
  // A built-in: its id is fixed once the registry exists.
  static const std::optional<AlgoId> id = findAlgo(kOneShotName);
  return id;
}

double oneShotFifoUs(Coll c, const CostInputs& in, double llUs) {
  const int n = std::max(in.nranks, 1);
  if (n == 1) return in.intra.latencyUs;
  if (n > kOneShotFifoMaxRanks || !algoSupports(*oneShotId(), c)) return std::numeric_limits<double>::infinity();
  const double B = double(in.bytes);
  // Bytes each rank sends (AllGather/ReduceScatter: its 1/n share to each
  // peer; the others: the whole buffer to each).
  const double sent = (c == Coll::AllGather || c == Coll::ReduceScatter) ? (n - 1) * B / n : (n - 1) * B;
  const AlgoCalibration& cal = in.calibration(*oneShotId());
  const double us = cal.baseUs + hopLatencyUs(in) * (1 + (n - 2) / 2.0) + cal.bwScale * 2 * sent / linkBytesPerUs(in);
  return std::isfinite(llUs) ? std::max(us, llUs * (1 + 1e-9)) : us;
}

bool isOneShot(AlgoId a) {
  const std::optional<AlgoId> id = oneShotId();
  return id && *id == a;
}

}  // namespace weft::algo
