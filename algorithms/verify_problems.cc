// What each rank's output must hold after a collective or a batch of
// point-to-point calls (the Problems the verifier checks plans against),
// and how the issues found are named. The simulation itself is verify.cc.
#include <algorithm>
#include <map>
#include <string>

#include "algorithms/verify.h"

namespace weft::verify {

const char* issueName(IssueKind k) {
  switch (k) {
    case IssueKind::BadStep: return "bad-step";
    case IssueKind::OutOfBounds: return "out-of-bounds";
    case IssueKind::FifoShared: return "fifo-shared";
    case IssueKind::SizeMismatch: return "size-mismatch";
    case IssueKind::NoSender: return "no-sender";
    case IssueKind::Deadlock: return "deadlock";
    case IssueKind::Leftover: return "leftover";
    case IssueKind::Uninitialised: return "uninitialised";
    case IssueKind::WrongContent: return "wrong-content";
  }
  return "?";
}

bool Result::has(IssueKind k) const {
  for (const auto& i : issues)
    if (i.kind == k) return true;
  return false;
}

std::string Result::text() const {
  std::string s;
  for (const auto& i : issues) s += std::string(issueName(i.kind)) + ": " + i.text + "\n";
  return s;
}

namespace {

RankSet allRanks(int n) {
  RankSet s;
  for (int r = 0; r < n; r++) s.set(r);
  return s;
}

RankSet only(int r) {
  RankSet s;
  s.set(r);
  return s;
}

}  // namespace

Problem collectiveProblem(plan::Coll coll, int n, uint64_t count, int root, bool inPlace,
                          const plan::FifoGeometry& g) {
  Problem p;
  p.geometry = g;
  p.buffers.resize(n);
  for (int r = 0; r < n; r++) {
    BufferLayout L;
    L.aliased = inPlace;
    const uint64_t N = uint64_t(n);
    switch (coll) {
      case plan::Coll::AllReduce:
        L.sendElems = L.recvElems = count;
        p.expect.push_back({r, 0, 0, count, allRanks(n), 0, 0, true});
        break;
      case plan::Coll::ReduceScatter:
        L.sendElems = N * count;
        L.recvElems = count;
        L.recvBase = inPlace ? uint64_t(r) * count : 0;
        p.expect.push_back({r, 0, 0, count, allRanks(n), 0, int64_t(uint64_t(r) * count), true});
        break;
      case plan::Coll::AllGather:
        L.sendElems = count;
        L.recvElems = N * count;
        L.sendBase = inPlace ? uint64_t(r) * count : 0;
        for (int q = 0; q < n; q++)
          p.expect.push_back({r, 0, uint64_t(q) * count, count, only(q), 0, -int64_t(uint64_t(q) * count), false});
        break;
      case plan::Coll::Broadcast:
        // Only the root's send buffer exists.
        L.sendElems = r == root ? count : 0;
        L.recvElems = count;
        p.expect.push_back({r, 0, 0, count, only(root), 0, 0, false});
        break;
      case plan::Coll::Reduce:
        // Only the root's receive buffer exists.
        L.sendElems = count;
        L.recvElems = r == root ? count : 0;
        if (r == root) p.expect.push_back({r, 0, 0, count, allRanks(n), 0, 0, true});
        break;
      case plan::Coll::AllToAll:
        L.sendElems = L.recvElems = N * count;
        for (int q = 0; q < n; q++)
          p.expect.push_back({r, 0, uint64_t(q) * count, count, only(q), 0,
                              int64_t(uint64_t(r) * count) - int64_t(uint64_t(q) * count), false});
        break;
      case plan::Coll::SendRecv: break;
    }
    p.buffers[r].push_back(L);
  }
  return p;
}

Problem p2pProblem(const std::vector<std::vector<algo::P2POp>>& ops, const plan::FifoGeometry& g) {
  Problem p;
  p.geometry = g;
  const int n = int(ops.size());
  p.buffers.resize(n);
  for (int r = 0; r < n; r++)
    for (const auto& op : ops[r]) {
      if (p.buffers[r].size() <= op.bind) p.buffers[r].resize(op.bind + 1);
      (op.isSend ? p.buffers[r][op.bind].sendElems : p.buffers[r][op.bind].recvElems) = op.count;
    }
  // The k-th receive at r from q takes the k-th send from q to r.
  for (int r = 0; r < n; r++) {
    std::map<int, int> seen;  // peer -> receives so far
    for (const auto& op : ops[r]) {
      if (op.isSend || op.peer < 0 || op.peer >= n) continue;
      int k = seen[op.peer]++;
      for (const auto& s : ops[op.peer]) {
        if (!s.isSend || s.peer != r) continue;
        if (k-- == 0) {
          p.expect.push_back({r, op.bind, 0, std::min(op.count, s.count), only(op.peer), s.bind, 0, false});
          break;
        }
      }
    }
  }
  return p;
}

Result verifyBuilder(plan::Plan (*build)(const algo::CollArgs&), const algo::CollArgs& a, bool inPlace,
                     std::vector<plan::Plan>* plans) {
  Problem p = collectiveProblem(a.coll, a.nranks, a.count, a.root, inPlace, a.geometry);
  for (int r = 0; r < a.nranks; r++) {
    algo::CollArgs mine = a;
    mine.rank = r;
    p.plans.push_back(build(mine));
    p.plans.back().elemSize = a.elemSize;
  }
  Result result = verify(p);
  if (plans) *plans = std::move(p.plans);
  return result;
}

}  // namespace weft::verify
