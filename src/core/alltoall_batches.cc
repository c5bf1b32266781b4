#include "src/core/alltoall_batches.h"

#include <algorithm>

#include "src/core/comm.h"
#include "src/core/connections.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {
namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Evicts, least recently used first, as many held distances outside `batch`
// as keep held + batch within maxPeers; then the batch's become the most
// recently used.
void makeRoomAndUse(AllToAllBatch& b, std::vector<int>& lru, size_t maxPeers) {
  size_t fresh = 0;
  for (int d : b.distances) fresh += !contains(lru, d);
  size_t excess = lru.size() + fresh > maxPeers ? lru.size() + fresh - maxPeers : 0;
  for (auto it = lru.begin(); it != lru.end() && excess > 0;) {
    if (contains(b.distances, *it)) {
      ++it;
      continue;
    }
    b.evict.push_back(*it);
    it = lru.erase(it);
    --excess;
  }
  for (int d : b.distances) {
    if (auto it = std::find(lru.begin(), lru.end(), d); it != lru.end()) lru.erase(it);
    lru.push_back(d);
  }
  b.heldAfter = lru;
}

// The self copy (when asked) and the channels of `distances` (1-based).
plan::Plan partOf(const plan::Plan& p, const std::vector<int>& distances, bool withSelf) {
  plan::Plan part;
  part.coll = p.coll;
  part.nranks = p.nranks;
  part.rank = p.rank;
  part.elemSize = p.elemSize;
  part.scratchElems = p.scratchElems;
  part.sliceBytes = p.sliceBytes;
  part.wire = p.wire;
  part.deviceLl = p.deviceLl;
  if (withSelf) part.channels.push_back(p.channels[0]);
  for (int d : distances) {
    part.channels.push_back(p.channels[2 * size_t(d) - 1]);
    part.channels.push_back(p.channels[2 * size_t(d)]);
  }
  return part;
}

}  // namespace

std::vector<AllToAllBatch> scheduleAllToAll(int distances, size_t maxPeers, const std::vector<int>& held) {
  if (maxPeers == 0) raise(weftInternalError, "alltoall batches: a bound of 0 peers");
  std::vector<int> lru;
  for (int d : held)
    if (d >= 1 && d <= distances && !contains(lru, d)) lru.push_back(d);
  std::vector<char> isHeld(size_t(distances) + 1, 0);
  for (int d : lru) isHeld[d] = 1;
  std::vector<int> pending;
  for (int d = 1; d <= distances; ++d)
    if (!isHeld[d]) pending.push_back(d);
  std::vector<AllToAllBatch> out;
  size_t next = 0;
  // The first batch: what is held (at most maxPeers of it), then new ones.
  AllToAllBatch first;
  for (size_t i = lru.size() > maxPeers ? lru.size() - maxPeers : 0; i < lru.size(); ++i)
    first.distances.push_back(lru[i]);
  for (size_t i = 0; i < lru.size() - first.distances.size(); ++i) pending.push_back(lru[i]);
  while (first.distances.size() < maxPeers && next < pending.size()) first.distances.push_back(pending[next++]);
  makeRoomAndUse(first, lru, maxPeers);
  out.push_back(std::move(first));
  while (next < pending.size()) {
    AllToAllBatch b;
    while (b.distances.size() < maxPeers && next < pending.size()) b.distances.push_back(pending[next++]);
    makeRoomAndUse(b, lru, maxPeers);
    out.push_back(std::move(b));
  }
  return out;
}

void runAllToAllBounded(weftComm* comm, const plan::Plan& p, size_t maxPeers,
                        const std::function<void(const plan::Plan&)>& run) {
  const int distances = static_cast<int>((p.channels.size() - 1) / 2);
  const std::vector<AllToAllBatch> batches = scheduleAllToAll(distances, maxPeers, comm->connections->allToAllHeld);
  Connections& conns = *comm->connections;
  bool selfDone = false;
  for (const AllToAllBatch& b : batches) {
    if (!b.evict.empty()) {
      // Every rank is done with every batch before this one (and every
      // earlier call) once all are here, so no end closes under a transfer.
      comm->bootstrap->barrier();
      conns.releaseTemporary(partOf(p, b.evict, false));
    }
    comm->connections->allToAllHeld = b.heldAfter;
    plan::Plan part = partOf(p, b.distances, !selfDone);
    selfDone = true;
    const size_t made = conns.endsMade();
    conns.ensureTemporary(part);
    WEFT_TRACE(kColl, "rank %d: AllToAll batch of %zu distance(s), %zu closed, %zu connection end(s) made",
               comm->rank, b.distances.size(), b.evict.size(), conns.endsMade() - made);
    run(part);
  }
}

}  // namespace weft
