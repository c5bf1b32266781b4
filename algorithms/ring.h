// Ring algorithms as plan builders (pure functions, no I/O).
//
// AllReduce runs a reduce-scatter then an all-gather around the ring,
// 2(n-1) communication steps per loop; ReduceScatter and AllGather are the
// two halves alone; Broadcast and Reduce are pipelined chains that start
// (Broadcast) or end (Reduce) at the root. Channels take disjoint contiguous
// slices of the data and use connection index = channel index.
#pragma once

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft::algo {

// Implements AllReduce, ReduceScatter, AllGather, Broadcast, Reduce; throws
// weftInvalidArgument for any other collective.
plan::Plan buildRing(const CollArgs& a);

// Whether buildRing implements `c`.
bool ringSupports(plan::Coll c);

}  // namespace weft::algo
