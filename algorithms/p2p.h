// Point-to-point plans: AllToAll, and a grouped batch of send/recv calls.
//
// Every (peer, direction) gets its own channel, so a slow receive from one
// peer never holds back a send to another; calls to the same peer in the same
// direction stay in the user's order, which is how both ends match them.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft::algo {

// One user call of a grouped batch.
struct P2POp {
  bool isSend = false;
  int peer = -1;
  uint64_t count = 0;  // elements
  uint16_t bind = 0;   // the (send, recv) buffer pair this call uses
};

// AllToAll: a.count elements to and from every rank; block q of Send goes to
// rank q and block q of Recv comes from rank q. The own block is a local copy.
plan::Plan buildAllToAll(const CollArgs& a);

// A grouped batch on one rank, ops in the user's order. A send to self and a
// receive from self (matched in order, equal counts) become a local copy via
// Scratch, because a step binds one buffer pair and the two calls bind two.
// Throws weftInvalidUsage for an unmatched self op, weftInvalidArgument for a
// peer out of range.
plan::Plan buildP2P(int nranks, int rank, uint32_t elemSize, const std::vector<P2POp>& ops);

}  // namespace weft::algo
