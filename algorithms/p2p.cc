#include "algorithms/p2p.h"

#include <map>
#include <utility>

#include "src/util/error.h"

namespace weft::algo {

using plan::Buf;
using plan::ChannelPlan;
using plan::Plan;
using plan::Step;

Plan buildAllToAll(const CollArgs& a) {
  validateArgs(a);
  if (a.coll != plan::Coll::AllToAll) raise(weftInvalidArgument, "alltoall: called for %s", plan::collName(a.coll));
  Plan p = emptyPlan(a);
  if (a.count == 0) return p;
  const uint64_t c = a.count;
  ChannelPlan self;
  self.steps.push_back(plan::copy(Buf::Send, uint64_t(a.rank) * c, Buf::Recv, uint64_t(a.rank) * c, c));
  p.channels.push_back(std::move(self));
  // Start with the next rank and wrap, so that rank r's first channels talk
  // to different peers than rank r+1's: executors that start channels in
  // order spread the load instead of all hitting rank 0 first.
  for (int i = 1; i < a.nranks; i++) {
    int to = (a.rank + i) % a.nranks;
    int from = (a.rank - i + a.nranks) % a.nranks;
    ChannelPlan out, in;
    out.steps.push_back(plan::send(to, Buf::Send, uint64_t(to) * c, c));
    in.steps.push_back(plan::recv(from, Buf::Recv, uint64_t(from) * c, c));
    p.channels.push_back(std::move(out));
    p.channels.push_back(std::move(in));
  }
  return p;
}

Plan buildP2P(int nranks, int rank, uint32_t elemSize, const std::vector<P2POp>& ops) {
  if (nranks < 1 || rank < 0 || rank >= nranks) raise(weftInvalidArgument, "p2p: rank %d of %d", rank, nranks);
  Plan p;
  p.coll = plan::Coll::SendRecv;
  p.nranks = nranks;
  p.rank = rank;
  p.elemSize = elemSize;

  std::vector<const P2POp*> selfSends, selfRecvs;
  std::map<std::pair<int, bool>, size_t> channelOf;  // (peer, isSend) -> channel
  for (const auto& op : ops) {
    if (op.peer < 0 || op.peer >= nranks) raise(weftInvalidArgument, "p2p: peer %d of %d", op.peer, nranks);
    if (op.peer == rank) {
      (op.isSend ? selfSends : selfRecvs).push_back(&op);
      continue;
    }
    auto key = std::make_pair(op.peer, op.isSend);
    auto it = channelOf.find(key);
    if (it == channelOf.end()) {
      it = channelOf.emplace(key, p.channels.size()).first;
      p.channels.emplace_back();
    }
    if (op.count == 0) continue;  // the peer skips its matching empty call too
    Step s = op.isSend ? plan::send(op.peer, Buf::Send, 0, op.count) : plan::recv(op.peer, Buf::Recv, 0, op.count);
    s.bind = op.bind;
    p.channels[it->second].steps.push_back(s);
  }

  if (selfSends.size() != selfRecvs.size())
    raise(weftInvalidUsage, "p2p: rank %d has %zu sends to itself and %zu receives from itself", rank,
          selfSends.size(), selfRecvs.size());
  ChannelPlan self;
  for (size_t i = 0; i < selfSends.size(); i++) {
    const P2POp& s = *selfSends[i];
    const P2POp& r = *selfRecvs[i];
    if (s.count != r.count)
      raise(weftInvalidUsage, "p2p: rank %d sends %llu elements to itself, receives %llu", rank,
            (unsigned long long)s.count, (unsigned long long)r.count);
    if (s.count == 0) continue;
    // One step binds one buffer pair; the two calls bind two, so the copy
    // goes through scratch.
    Step in = plan::copy(Buf::Send, 0, Buf::Scratch, p.scratchElems, s.count);
    in.bind = s.bind;
    Step out = plan::copy(Buf::Scratch, p.scratchElems, Buf::Recv, 0, s.count);
    out.bind = r.bind;
    self.steps.push_back(in);
    self.steps.push_back(out);
    p.scratchElems += s.count;
  }
  if (!self.steps.empty()) p.channels.push_back(std::move(self));
  return p;
}

}  // namespace weft::algo
