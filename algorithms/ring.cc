#include "algorithms/ring.h"

#include "algorithms/collectives.h"

#include "algorithms/partition.h"
#include "src/util/error.h"

namespace weft::algo {

using plan::Buf;
using plan::ChannelPlan;
using plan::kPostOp;
using plan::kPreOp;
using plan::Plan;
using plan::Step;

namespace {

// Where this rank sits in the ring and who its neighbours are.
struct RingPos {
  std::vector<int> order;
  int n = 1, pos = 0;
  int at(int64_t i) const { return order[((i % n) + n) % n]; }
  int prev() const { return at(pos - 1); }
  int next() const { return at(pos + 1); }
};

RingPos ringPos(const CollArgs& a, int channel) {
  RingPos r;
  r.order = ringOrder(a, channel);
  r.n = a.nranks;
  for (int i = 0; i < r.n; i++)
    if (r.order[i] == a.rank) r.pos = i;
  return r;
}

void push(ChannelPlan& ch, Step s, uint8_t conn) {
  if (s.count == 0) return;  // both ends skip the same empty blocks
  s.conn = conn;
  ch.steps.push_back(s);
}

// One loop of AllReduce over [base, base+len): the loop is cut into n blocks,
// block i belonging to ring position i; reduce-scatter leaves position p
// owning the full sum of block p+1, all-gather then circulates the sums.
void allReduceLoop(ChannelPlan& ch, const RingPos& r, uint64_t base, uint64_t len, uint64_t unit, uint8_t conn) {
  const int n = r.n, p = r.pos;
  auto block = [&](int64_t i) { return alignedPart(len, n, uint64_t(((i % n) + n) % n), unit); };
  auto at = [&](int64_t i) { Range b = block(i); b.off += base; return b; };

  Range b = at(p);
  push(ch, plan::send(r.next(), Buf::Send, b.off, b.count, kPreOp), conn);
  for (int s = 1; s <= n - 2; s++) {
    b = at(p - s);
    push(ch, plan::recvReduceSend(r.prev(), r.next(), Buf::Send, b.off, b.count, kPreOp), conn);
  }
  b = at(p + 1);
  push(ch, plan::recvReduceCopySend(r.prev(), r.next(), Buf::Send, b.off, Buf::Recv, b.off, b.count, kPreOp | kPostOp),
       conn);
  for (int k = 1; k <= n - 2; k++) {
    b = at(p + 1 - k);
    push(ch, plan::recvCopySend(r.prev(), r.next(), Buf::Recv, b.off, b.count), conn);
  }
  b = at(p + 2);
  push(ch, plan::recv(r.prev(), Buf::Recv, b.off, b.count), conn);
}

// ReduceScatter over the slice [off, off+len) of every rank's block: the
// partial sum of rank X's block travels n-1 hops and ends on rank X. A rank
// reads its own Send block only in the last step, the one that writes Recv,
// so an in-place call (Recv inside Send) never reads overwritten data.
void reduceScatterLoop(ChannelPlan& ch, const RingPos& r, uint64_t count, uint64_t off, uint64_t len, uint8_t conn) {
  const int n = r.n, p = r.pos;
  auto blockOff = [&](int owner) { return uint64_t(owner) * count + off; };
  push(ch, plan::send(r.next(), Buf::Send, blockOff(r.at(p - 1)), len, kPreOp), conn);
  for (int s = 1; s <= n - 2; s++)
    push(ch, plan::recvReduceSend(r.prev(), r.next(), Buf::Send, blockOff(r.at(p - 1 - s)), len, kPreOp), conn);
  push(ch, plan::recvReduceCopy(r.prev(), Buf::Send, blockOff(r.at(p)), Buf::Recv, off, len, kPreOp | kPostOp), conn);
}

// AllGather over [off, off+len) of every rank's contribution. Only the first
// step reads Send; later steps write other ranks' blocks of Recv, never the
// one an in-place Send lives in.
void allGatherLoop(ChannelPlan& ch, const RingPos& r, uint64_t count, uint64_t off, uint64_t len, uint8_t conn) {
  const int n = r.n, p = r.pos;
  auto blockOff = [&](int owner) { return uint64_t(owner) * count + off; };
  Step first = plan::copy(Buf::Send, off, Buf::Recv, blockOff(r.at(p)), len);
  first.nSend = 1;
  first.sendPeer[0] = r.next();
  push(ch, first, conn);
  for (int k = 1; k <= n - 2; k++)
    push(ch, plan::recvCopySend(r.prev(), r.next(), Buf::Recv, blockOff(r.at(p - k)), len), conn);
  push(ch, plan::recv(r.prev(), Buf::Recv, blockOff(r.at(p + 1)), len), conn);
}

// Broadcast: a chain root -> ... along the ring; each step streams the whole
// slice, piece by piece, so the chain is pipelined at piece granularity.
void broadcastChain(ChannelPlan& ch, const RingPos& r, int root, Range s, uint8_t conn) {
  int rootPos = 0;
  for (int i = 0; i < r.n; i++)
    if (r.order[i] == root) rootPos = i;
  int dist = ((r.pos - rootPos) % r.n + r.n) % r.n;
  bool last = dist == r.n - 1;
  if (dist == 0) {
    Step st = plan::copy(Buf::Send, s.off, Buf::Recv, s.off, s.count);
    st.nSend = 1;
    st.sendPeer[0] = r.next();
    push(ch, st, conn);
  } else if (!last) {
    push(ch, plan::recvCopySend(r.prev(), r.next(), Buf::Recv, s.off, s.count), conn);
  } else {
    push(ch, plan::recv(r.prev(), Buf::Recv, s.off, s.count), conn);
  }
}

// Reduce: a chain along the ring that ends at the root; partial sums flow
// forward and only the root writes Recv.
void reduceChain(ChannelPlan& ch, const RingPos& r, int root, Range s, uint8_t conn) {
  int rootPos = 0;
  for (int i = 0; i < r.n; i++)
    if (r.order[i] == root) rootPos = i;
  int dist = ((r.pos - rootPos - 1) % r.n + r.n) % r.n;  // root is n-1
  if (dist == 0) {
    push(ch, plan::send(r.next(), Buf::Send, s.off, s.count, kPreOp), conn);
  } else if (dist < r.n - 1) {
    push(ch, plan::recvReduceSend(r.prev(), r.next(), Buf::Send, s.off, s.count, kPreOp), conn);
  } else {
    push(ch, plan::recvReduceCopy(r.prev(), Buf::Send, s.off, Buf::Recv, s.off, s.count, kPreOp | kPostOp), conn);
  }
}

Plan singleRank(const CollArgs& a) {
  Plan p = emptyPlan(a);
  uint8_t flags = plan::collInfo(a.coll).reduces ? (kPreOp | kPostOp) : 0;
  int nch = usableChannels(a);
  for (int c = 0; c < nch; c++) {
    Range s = channelPart(a, nch, c);
    ChannelPlan ch;
    push(ch, plan::copy(Buf::Send, s.off, Buf::Recv, s.off, s.count, flags), 0);
    p.channels.push_back(std::move(ch));
  }
  return p;
}

}  // namespace

bool ringSupports(plan::Coll c) {
  switch (c) {
    case plan::Coll::AllReduce:
    case plan::Coll::ReduceScatter:
    case plan::Coll::AllGather:
    case plan::Coll::Broadcast:
    case plan::Coll::Reduce: return true;
    default: return false;
  }
}

Plan buildRing(const CollArgs& a) {
  validateArgs(a);
  if (!ringSupports(a.coll)) raise(weftInvalidArgument, "ring: %s is not a ring collective", plan::collName(a.coll));
  if (a.count == 0) return emptyPlan(a);
  if (a.nranks == 1) return singleRank(a);
  if (a.geometry.nSlots < 2)
    raise(weftInvalidArgument, "ring: a FIFO of %u slot cannot hold a chunk and leave room", a.geometry.nSlots);

  Plan p = emptyPlan(a);
  const uint64_t chunk = alignedChunk(ringChunkElems(a.geometry, a.elemSize), splitUnit(a));
  const int nch = usableChannels(a);
  for (int c = 0; c < nch; c++) {
    const uint8_t conn = uint8_t(c);
    const RingPos r = ringPos(a, c);  // channels may follow different rings (NICs)
    const Range slice = channelPart(a, nch, c);
    ChannelPlan ch;
    switch (a.coll) {
      case plan::Coll::AllReduce: {
        const uint64_t loop = chunk * uint64_t(r.n);
        for (uint64_t done = 0; done < slice.count; done += loop)
          allReduceLoop(ch, r, slice.off + done, std::min(loop, slice.count - done), splitUnit(a), conn);
        break;
      }
      case plan::Coll::ReduceScatter:
        for (uint64_t done = 0; done < slice.count; done += chunk)
          reduceScatterLoop(ch, r, a.count, slice.off + done, std::min(chunk, slice.count - done), conn);
        break;
      case plan::Coll::AllGather:
        for (uint64_t done = 0; done < slice.count; done += chunk)
          allGatherLoop(ch, r, a.count, slice.off + done, std::min(chunk, slice.count - done), conn);
        break;
      case plan::Coll::Broadcast: broadcastChain(ch, r, a.root, slice, conn); break;
      case plan::Coll::Reduce: reduceChain(ch, r, a.root, slice, conn); break;
      default: break;
    }
    p.channels.push_back(std::move(ch));
  }
  return p;
}

}  // namespace weft::algo
