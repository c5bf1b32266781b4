#include "algorithms/recursive_doubling.h"

#include <algorithm>
#include <cmath>

#include "algorithms/collectives.h"

namespace weft::algo {

using plan::Buf;
using plan::ChannelPlan;
using plan::Coll;
using plan::kPostOp;
using plan::kPreOp;
using plan::Plan;

namespace {

// The largest power of two not above n (n >= 1).
int powerBelow(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// One piece [off, off+len) of the call, the whole exchange.
void round(ChannelPlan& ch, const CollArgs& a, uint64_t off, uint64_t len) {
  const int r = a.rank, n = a.nranks, p = powerBelow(n), extra = n - p;
  if (r >= p) {  // folds into rank r - p, and gets the result from it
    ch.steps.push_back(plan::send(r - p, Buf::Send, off, len, kPreOp));
    ch.steps.push_back(plan::recv(r - p, Buf::Recv, off, len));
    return;
  }
  // The partial sum lives in Send (own contribution, pre-scaled when read)
  // until a step has written it to Recv.
  Buf cur = Buf::Send;
  if (r < extra) {
    ch.steps.push_back(plan::recvReduceCopy(r + p, Buf::Send, off, Buf::Recv, off, len, kPreOp));
    cur = Buf::Recv;
  }
  for (int bit = 1; bit < p; bit *= 2) {
    const int peer = r ^ bit;
    const uint8_t pre = cur == Buf::Send ? kPreOp : 0;
    const uint8_t post = bit * 2 == p ? kPostOp : 0;
    ch.steps.push_back(plan::send(peer, cur, off, len, pre));
    ch.steps.push_back(plan::recvReduceCopy(peer, cur, off, Buf::Recv, off, len, uint8_t(pre | post)));
    cur = Buf::Recv;
  }
  if (r < extra) ch.steps.push_back(plan::send(r + p, Buf::Recv, off, len));
}

// For the pipeline model: steps in sequence, each moving the whole buffer
// (rounds, not a pipeline through hops whose stages each carry a slice), so
// it is priced as the rings are, through its own latency and bytes terms.
double recursiveDoublingSteps(Coll, int nranks) {
  const int n = std::max(nranks, 1), p = powerBelow(n);
  return std::log2(double(p)) + (n > p ? 2 : 0);
}

// Rounds: log2 of the power of two, plus the fold and the return for ranks
// past it. Each round sends and receives the whole buffer, one hop each,
// and its bytes count twice: a round's copy into the slot, transfer and
// reduction run one after another (the ring overlaps them across its
// steps), and over sockets a piece past the 32 KB the executor moves itself
// waits for a proxy thread with nothing to overlap. Measured, 4 processes
// over loopback TCP: the ring is faster from 64 KB (165-227 us against
// 329-465), doubling up to 32 KB; this puts the crossover at ~1.6 L W
// (~40 KB with the defaults).
CostTerms recursiveDoublingCost(Coll c, const CostInputs& in, double B) {
  const double rounds = recursiveDoublingSteps(c, in.nranks);
  return {rounds * hopLatencyUs(in), 2 * rounds * B / linkBytesPerUs(in)};
}

// On one host only: across hosts, pairs r ^ 2^k ignore where ranks are, and
// the trees and hierarchical rings there are built around it. Two ranks
// count: their one round is a plain exchange of FIFO pieces, which
// measured faster than both the one-shot plan under ll and the ring's two
// steps from 8 KB to 512 KB (2 processes over shm, weft-tune: 9.7 us at
// 32 KB against 14.4 and 19.7); the one-shot plan keeps the smaller calls.
bool recursiveDoublingApplies(Coll, const CostInputs& in) {
  return in.nranks >= 2 && std::clamp(in.nHosts, 1, in.nranks) == 1;
}

std::array<bool, plan::kNumColls> allReduceOnly() {
  std::array<bool, plan::kNumColls> s{};
  s[static_cast<int>(Coll::AllReduce)] = true;
  return s;
}

}  // namespace

Plan buildRecursiveDoubling(const CollArgs& a) {
  validateArgs(a);
  Plan p = emptyPlan(a);
  if (a.count == 0 || a.coll != Coll::AllReduce) return p;
  ChannelPlan ch;
  if (a.nranks == 1) {
    ch.steps.push_back(plan::copy(Buf::Send, 0, Buf::Recv, 0, a.count, kPreOp | kPostOp));
  } else {
    const uint64_t piece = pieceElems(a.geometry, a.elemSize);
    for (uint64_t off = 0; off < a.count; off += piece) round(ch, a, off, std::min(piece, a.count - off));
  }
  p.channels.push_back(std::move(ch));
  return p;
}

AlgoInfo recursiveDoublingAlgo() {
  return AlgoInfo{kRecursiveDoublingName, allReduceOnly(), buildRecursiveDoubling, recursiveDoublingCost, recursiveDoublingSteps, nullptr,
                  recursiveDoublingApplies};
}

}  // namespace weft::algo
