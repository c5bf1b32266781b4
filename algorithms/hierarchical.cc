#include "algorithms/hierarchical.h"

#include <algorithm>
#include <map>

#include "algorithms/partition.h"
#include "algorithms/tree.h"
#include "src/util/error.h"

namespace weft::algo {

using plan::Buf;
using plan::ChannelPlan;
using plan::kPostOp;
using plan::kPreOp;
using plan::Plan;
using plan::Step;

namespace {

// One ring: its ranks in ring order and this rank's position.
struct Ring {
  std::vector<int> ranks;
  int pos = 0;
  int n() const { return int(ranks.size()); }
  int wrap(int64_t i) const { return int(((i % n()) + n()) % n()); }
  int prev() const { return ranks[size_t(wrap(pos - 1))]; }
  int next() const { return ranks[size_t(wrap(pos + 1))]; }
};

void push(ChannelPlan& ch, Step s, uint8_t conn) {
  if (s.count == 0) return;  // both ends of a transfer skip the same empty blocks
  s.conn = conn;
  ch.steps.push_back(s);
}

// A local copy; dropped when it would copy a range onto itself unchanged.
void pushCopy(ChannelPlan& ch, Buf src, uint64_t srcOff, Buf dst, uint64_t dstOff, uint64_t count, uint8_t flags,
              uint8_t conn) {
  if (src == dst && srcOff == dstOff && flags == 0) return;
  push(ch, plan::copy(src, srcOff, dst, dstOff, count, flags), conn);
}

// Ring reduce-scatter of one block per member, each at most a chunk: member
// q's block has count(q) elements (the same on every rank) at local offset
// srcOff(q) of src (pre: kPreOp when src is the user's data); the owner
// writes the sum at dst + dstOff with flags `fin`.
template <class Count, class Off>
void reduceScatterPass(ChannelPlan& ch, const Ring& r, Count count, Off srcOff, Buf src, uint8_t pre, Buf dst,
                       uint64_t dstOff, uint8_t fin, uint8_t conn) {
  const int n = r.n(), p = r.pos;
  if (n == 1) return pushCopy(ch, src, srcOff(0), dst, dstOff, count(0), pre | fin, conn);
  int q = r.wrap(p - 1);
  push(ch, plan::send(r.next(), src, srcOff(q), count(q), pre), conn);
  for (int s = 1; s <= n - 2; s++) {
    q = r.wrap(p - 1 - s);
    push(ch, plan::recvReduceSend(r.prev(), r.next(), src, srcOff(q), count(q), pre), conn);
  }
  push(ch, plan::recvReduceCopy(r.prev(), src, srcOff(p), dst, dstOff, count(p), pre | fin), conn);
}

// Ring all-gather of one block per member into Recv: member q's block has
// count(q) elements at dstOff(q) on every rank. This rank's own block comes
// from src + srcOff, or is in place already (src None).
template <class Count, class Off>
void allGatherPass(ChannelPlan& ch, const Ring& r, Count count, Off dstOff, Buf src, uint64_t srcOff, uint8_t conn) {
  const int n = r.n(), p = r.pos;
  if (n == 1) {
    if (src != Buf::None) pushCopy(ch, src, srcOff, Buf::Recv, dstOff(p), count(p), 0, conn);
    return;
  }
  Step first = plan::send(r.next(), Buf::Recv, dstOff(p), count(p));
  if (src != Buf::None) {  // copy in and send on, in one step, as the flat ring does
    first = plan::copy(src, srcOff, Buf::Recv, dstOff(p), count(p));
    first.nSend = 1;
    first.sendPeer[0] = r.next();
  }
  push(ch, first, conn);
  for (int k = 1; k <= n - 2; k++) {
    const int q = r.wrap(p - k);
    push(ch, plan::recvCopySend(r.prev(), r.next(), Buf::Recv, dstOff(q), count(q)), conn);
  }
  const int q = r.wrap(p + 1);
  push(ch, plan::recv(r.prev(), Buf::Recv, dstOff(q), count(q)), conn);
}

// Ring AllReduce of [base, base+len) (at most a chunk per member) from src
// into Recv, as the flat ring's loop: reduce-scatter, then all-gather.
void allReducePass(ChannelPlan& ch, const Ring& r, Buf src, uint8_t pre, uint8_t fin, uint64_t base, uint64_t len,
                   uint64_t unit, uint8_t conn) {
  const int n = r.n(), p = r.pos;
  if (n == 1) return pushCopy(ch, src, base, Buf::Recv, base, len, pre | fin, conn);
  auto at = [&](int64_t i) {
    Range b = alignedPart(len, uint64_t(n), uint64_t(r.wrap(i)), unit);
    b.off += base;
    return b;
  };
  Range b = at(p);
  push(ch, plan::send(r.next(), src, b.off, b.count, pre), conn);
  for (int s = 1; s <= n - 2; s++) {
    b = at(p - s);
    push(ch, plan::recvReduceSend(r.prev(), r.next(), src, b.off, b.count, pre), conn);
  }
  b = at(p + 1);
  push(ch, plan::recvReduceCopySend(r.prev(), r.next(), src, b.off, Buf::Recv, b.off, b.count, pre | fin), conn);
  for (int k = 1; k <= n - 2; k++) {
    b = at(p + 1 - k);
    push(ch, plan::recvCopySend(r.prev(), r.next(), Buf::Recv, b.off, b.count), conn);
  }
  b = at(p + 2);
  push(ch, plan::recv(r.prev(), Buf::Recv, b.off, b.count), conn);
}

// AllReduce of [off, off+len) of Recv over a binary tree of the ring's
// members (position 0 the root): up (children's sums plus this rank's, to
// the parent), then down (the total from the parent, to the children), one
// after the other in the channel. The root finishes the sum before it sends
// any of it down, so no rank's down step can hold up anyone's up step.
void treeAllReducePass(ChannelPlan& ch, const Ring& r, uint64_t off, uint64_t len, uint8_t conn) {
  if (r.n() == 1) return pushCopy(ch, Buf::Recv, off, Buf::Recv, off, len, kPostOp, conn);
  const std::vector<int> parent = binaryTreeParents(r.n());
  Step up;
  Step down;
  for (int q = 0; q < r.n(); q++)
    if (parent[size_t(q)] == r.pos) {
      up.recvPeer[up.nRecv++] = r.ranks[size_t(q)];
      down.sendPeer[down.nSend++] = r.ranks[size_t(q)];
    }
  up.src = Buf::Recv;
  up.srcOff = down.dstOff = off;
  up.count = down.count = len;
  const int p = parent[size_t(r.pos)];
  if (p >= 0) {
    up.sendPeer[up.nSend++] = r.ranks[size_t(p)];
    down.recvPeer[down.nRecv++] = r.ranks[size_t(p)];
    down.dst = Buf::Recv;
  } else {
    up.dst = Buf::Recv;
    up.dstOff = off;
    up.flags = kPostOp;
    down.src = Buf::Recv;
    down.srcOff = off;
  }
  push(ch, up, conn);
  if (down.nRecv + down.nSend > 0) push(ch, down, conn);
}

// Calls pass(at, count) once per chunk-sized loop over blocks of len(q)
// elements (q < n): count(q) is block q's share of the loop starting at
// element `at` of every block.
template <class Len, class Pass>
void chunked(uint64_t chunk, int n, Len len, Pass pass) {
  uint64_t longest = 0;
  for (int q = 0; q < n; q++) longest = std::max<uint64_t>(longest, len(q));
  for (uint64_t at = 0; at < longest; at += chunk) {
    auto count = [&](int q) {
      const uint64_t l = len(q);
      return l > at ? std::min(chunk, l - at) : uint64_t(0);
    };
    pass(at, count);
  }
}

// What every phase of one channel needs.
struct Ctx {
  HostLayout lay;
  Ring host;  // this rank's host, in chain order
  int nHosts = 1;
  uint64_t chunk = 1;
  uint64_t unit = 1;  // split points fall on multiples of it (splitUnit)
  uint8_t conn = 0;
  bool railTrees = false;  // AllReduce across hosts over a tree per rail, not a ring

  // The rank of local index `local` on host g, -1 when the host is smaller.
  int rankAt(int g, int local) const {
    const auto& h = lay.hosts[size_t(g)];
    return local >= 0 && local < int(h.size()) ? h[size_t(local)] : -1;
  }
  // Rail i across hosts, in host order: each host's holder of the rail.
  Ring rail(int i) const {
    Ring r;
    for (int g = 0; g < nHosts; g++) r.ranks.push_back(rankAt(g, lay.railHolder(g, i)));
    r.pos = lay.myHost;
    return r;
  }
  // How many rails each member of this host holds at most (units of a host pass).
  int units() const { return (lay.maxLocal + host.n() - 1) / host.n(); }
  // The rail member q of this host holds in unit u; -1 past the last rail.
  int railOf(int u, int q) const {
    const int i = u * host.n() + q;
    return i < lay.maxLocal ? i : -1;
  }
};

Ctx makeCtx(const CollArgs& a, int channel) {
  Ctx x;
  x.lay = hostLayout(a, channel);
  x.host.ranks = x.lay.hosts[size_t(x.lay.myHost)];
  x.host.pos = x.lay.myLocal;
  x.nHosts = int(x.lay.hosts.size());
  x.unit = splitUnit(a);
  x.chunk = alignedChunk(ringChunkElems(a.geometry, a.elemSize), x.unit);
  x.conn = uint8_t(channel);
  return x;
}

// AllReduce of the channel's part: Lmax rail blocks; the host ring reduces
// each into Recv of its holder, the rail rings finish them across hosts, the
// host ring spreads them.
void allReduceChannel(ChannelPlan& ch, const Ctx& x, Range part) {
  const bool net = x.nHosts > 1;
  auto railBlock = [&](int i) {
    if (i < 0) return Range{};
    Range b = alignedPart(part.count, uint64_t(x.lay.maxLocal), uint64_t(i), x.unit);
    b.off += part.off;
    return b;
  };
  const int L = x.host.n(), me = x.host.pos;
  for (int u = 0; u < x.units(); u++) {
    auto blk = [&](int q) { return railBlock(x.railOf(u, q)); };
    chunked(x.chunk, L, [&](int q) { return blk(q).count; }, [&](uint64_t at, auto count) {
      reduceScatterPass(ch, x.host, count, [&](int q) { return blk(q).off + at; }, Buf::Send, kPreOp, Buf::Recv,
                        blk(me).off + at, net ? 0 : kPostOp, x.conn);
    });
  }
  if (net)
    for (int u = 0; x.railOf(u, me) >= 0; u++) {
      const Range b = railBlock(x.railOf(u, me));
      const Ring r = x.rail(x.railOf(u, me));
      if (x.railTrees) {
        treeAllReducePass(ch, r, b.off, b.count, x.conn);
        continue;
      }
      const uint64_t loop = x.chunk * uint64_t(r.n());
      for (uint64_t done = 0; done < b.count; done += loop)
        allReducePass(ch, r, Buf::Recv, 0, kPostOp, b.off + done, std::min(loop, b.count - done), x.unit, x.conn);
    }
  for (int u = 0; u < x.units(); u++) {
    auto blk = [&](int q) { return railBlock(x.railOf(u, q)); };
    chunked(x.chunk, L, [&](int q) { return blk(q).count; }, [&](uint64_t at, auto count) {
      allGatherPass(ch, x.host, count, [&](int q) { return blk(q).off + at; }, Buf::None, 0, x.conn);
    });
  }
}

// ReduceScatter of the channel's part of every rank's block (count elements
// per rank): the host ring leaves on each rail's holder the host's sums of
// the blocks of that rail's ranks (in Scratch: one block per host per rail
// held), the rail ring then reduces them across hosts onto their owners.
void reduceScatterChannel(ChannelPlan& ch, const Ctx& x, uint64_t count, Range part) {
  const bool net = x.nHosts > 1;
  const int L = x.host.n(), me = x.host.pos;
  auto scratchOff = [&](int u, int g) { return (uint64_t(u) * uint64_t(x.nHosts) + uint64_t(g)) * count + part.off; };
  // Alone on its host, a rank's rail rings read the user's data directly.
  const bool direct = net && L == 1;
  for (int u = 0; u < x.units() && !direct; u++)
    for (int g = 0; g < x.nHosts; g++) {
      auto owner = [&](int q) { return x.rankAt(g, x.railOf(u, q)); };
      const Buf dst = net ? Buf::Scratch : Buf::Recv;
      const uint64_t dstBase = net ? scratchOff(u, g) : part.off;
      chunked(x.chunk, L, [&](int q) { return owner(q) >= 0 ? part.count : 0; }, [&](uint64_t at, auto cnt) {
        auto srcOff = [&](int q) { return owner(q) >= 0 ? uint64_t(owner(q)) * count + part.off + at : 0; };
        reduceScatterPass(ch, x.host, cnt, srcOff, Buf::Send, kPreOp, dst, dstBase + at, net ? 0 : kPostOp, x.conn);
      });
    }
  if (!net) return;
  for (int u = 0; x.railOf(u, me) >= 0; u++) {
    const int i = x.railOf(u, me);
    const Ring r = x.rail(i);
    auto srcOff = [&](int q) {
      if (!direct) return scratchOff(u, q);
      return x.rankAt(q, i) >= 0 ? uint64_t(x.rankAt(q, i)) * count + part.off : 0;
    };
    chunked(x.chunk, r.n(), [&](int q) { return x.rankAt(q, i) >= 0 ? part.count : 0; }, [&](uint64_t at, auto cnt) {
      reduceScatterPass(ch, r, cnt, [&](int q) { return srcOff(q) + at; }, direct ? Buf::Send : Buf::Scratch,
                        direct ? kPreOp : 0, Buf::Recv, part.off + at, kPostOp, x.conn);
    });
  }
}

// AllGather of the channel's part of every rank's block: each rail ring
// gathers its ranks' blocks on the rail's holders, then the host ring
// spreads every rail's blocks through the host.
void allGatherChannel(ChannelPlan& ch, const Ctx& x, uint64_t count, Range part) {
  const int L = x.host.n(), me = x.host.pos;
  auto blockOff = [&](int rank) { return rank >= 0 ? uint64_t(rank) * count + part.off : 0; };
  for (int u = 0; x.railOf(u, me) >= 0; u++) {
    const int i = x.railOf(u, me);
    const Ring r = x.rail(i);
    const bool mine = i == me;  // the rail of this rank's own block
    chunked(x.chunk, r.n(), [&](int q) { return x.rankAt(q, i) >= 0 ? part.count : 0; }, [&](uint64_t at, auto cnt) {
      allGatherPass(ch, r, cnt, [&](int q) { return blockOff(x.rankAt(q, i)) + at; }, mine ? Buf::Send : Buf::None,
                    part.off + at, x.conn);
    });
  }
  for (int u = 0; u < x.units(); u++)
    for (int g = 0; g < x.nHosts; g++) {
      auto owner = [&](int q) { return x.rankAt(g, x.railOf(u, q)); };
      chunked(x.chunk, L, [&](int q) { return owner(q) >= 0 ? part.count : 0; }, [&](uint64_t at, auto cnt) {
        allGatherPass(ch, x.host, cnt, [&](int q) { return blockOff(owner(q)) + at; }, Buf::None, 0, x.conn);
      });
    }
}

Plan singleRank(const CollArgs& a) {
  Plan p = emptyPlan(a);
  const uint8_t flags = a.coll == plan::Coll::AllGather ? 0 : (kPreOp | kPostOp);
  const int nch = usableChannels(a);
  for (int c = 0; c < nch; c++) {
    const Range s = channelPart(a, nch, c);
    ChannelPlan ch;
    push(ch, plan::copy(Buf::Send, s.off, Buf::Recv, s.off, s.count, flags), 0);
    p.channels.push_back(std::move(ch));
  }
  return p;
}

}  // namespace

HostLayout hostLayout(const CollArgs& a, int channel) {
  if (!a.hostOf.empty() && int(a.hostOf.size()) != a.nranks)
    raise(weftInvalidArgument, "hierarchical: %zu host ids for %d ranks", a.hostOf.size(), a.nranks);
  HostLayout lay;
  std::map<int, int> index;  // host id -> position in topology order
  for (int r : ringOrder(a, channel)) {
    const int id = a.hostOf.empty() ? r : a.hostOf[size_t(r)];
    auto [it, fresh] = index.emplace(id, int(lay.hosts.size()));
    if (fresh) lay.hosts.emplace_back();
    auto& members = lay.hosts[size_t(it->second)];
    if (r == a.rank) lay.myHost = it->second, lay.myLocal = int(members.size());
    members.push_back(r);
    lay.maxLocal = std::max(lay.maxLocal, int(members.size()));
  }
  return lay;
}

bool hierSupports(plan::Coll c) {
  return c == plan::Coll::AllReduce || c == plan::Coll::ReduceScatter || c == plan::Coll::AllGather;
}

namespace {

Plan buildHier(const CollArgs& a, bool railTrees) {
  validateArgs(a);
  if (!hierSupports(a.coll))
    raise(weftInvalidArgument, "hierarchical: %s is not implemented", plan::collName(a.coll));
  if (!a.hostOf.empty() && int(a.hostOf.size()) != a.nranks)
    raise(weftInvalidArgument, "hierarchical: %zu host ids for %d ranks", a.hostOf.size(), a.nranks);
  if (a.count == 0) return emptyPlan(a);
  if (a.nranks == 1) return singleRank(a);
  if (a.geometry.nSlots < 2)
    raise(weftInvalidArgument, "hierarchical: a FIFO of %u slot cannot hold a chunk and leave room", a.geometry.nSlots);
  Plan p = emptyPlan(a);
  const int nch = usableChannels(a);
  for (int c = 0; c < nch; c++) {
    Ctx x = makeCtx(a, c);
    x.railTrees = railTrees;
    const Range part = channelPart(a, nch, c);
    ChannelPlan ch;
    switch (a.coll) {
      case plan::Coll::AllReduce: allReduceChannel(ch, x, part); break;
      case plan::Coll::ReduceScatter:
        if (x.nHosts > 1 && x.host.n() > 1)
          p.scratchElems = std::max<uint64_t>(p.scratchElems, uint64_t(x.units()) * uint64_t(x.nHosts) * a.count);
        reduceScatterChannel(ch, x, a.count, part);
        break;
      default: allGatherChannel(ch, x, a.count, part); break;
    }
    p.channels.push_back(std::move(ch));
  }
  return p;
}

}  // namespace

Plan buildHierarchical(const CollArgs& a) { return buildHier(a, false); }

Plan buildHierarchicalTree(const CollArgs& a) {
  if (a.coll != plan::Coll::AllReduce)
    raise(weftInvalidArgument, "hierarchical tree: %s is not implemented", plan::collName(a.coll));
  return buildHier(a, true);
}

}  // namespace weft::algo
