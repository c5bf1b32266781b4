// An AllToAll over more peers than a rank may keep connected
// (WEFT_ALLTOALL_MAX_PEERS, `M`): it runs in batches of distances and keeps
// at most M of them connected, between calls too.
//
// The plan (algorithms/p2p.h) has the self copy, then a send and a receive
// channel per distance 1..n-1; distance d joins rank r -> r + d and
// r - d -> r, two connection ends per rank. Every rank holds the same
// distances at the same time: the schedule below is a pure function of the
// rank count, M and what the previous calls left connected, which is the
// same at every rank. So both ends of a pair connect it in the same batch
// and close it in the same batch (no half-closed pair), and a rank holds at
// most 2M AllToAll connection ends (those the AllToAll made: connections a
// ring, tree or point-to-point call made are not its to count or close).
//
// A call first runs the distances the last one left connected, filled up to
// M with new ones, then the rest in batches of M; a batch that needs room
// closes the least recently used distances it does not run, after a
// bootstrap barrier (closing a socket connection drains its last slots only
// while the receiver reads). The last batch's distances stay connected: with
// n - 1 <= M a call reconnects nothing after the first, and past it each
// call connects n - 1 - M distances instead of n - 1.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/plan.h"

struct weftComm;

namespace weft {

struct AllToAllBatch {
  std::vector<int> distances;  // run together, in this order
  std::vector<int> evict;      // closed first, after a barrier
  std::vector<int> heldAfter;  // connected once the batch is, least recently used first
};

// The batches of one call over distances 1..distances, given the distances
// held now (least recently used first). Pure: the same at every rank.
std::vector<AllToAllBatch> scheduleAllToAll(int distances, size_t maxPeers, const std::vector<int>& held);

// Runs AllToAll plan `p` (every distance, as built) in those batches on
// comm's connections: `run` executes one batch's part of the plan once its
// edges are connected. Updates Connections::allToAllHeld.
void runAllToAllBounded(weftComm* comm, const plan::Plan& p, size_t maxPeers,
                        const std::function<void(const plan::Plan&)>& run);

}  // namespace weft
