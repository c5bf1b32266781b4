// Recursive doubling ("doubling"), AllReduce only: in round k every rank
// swaps its partial sum with rank r ^ 2^k and adds the two, so after
// log2(n) rounds every rank holds the whole sum. One hop per round instead
// of the ring's 2(n-1) hops: with 4 ranks 2 hops against 6, which is what
// a small call over sockets pays for (a hop there is a network round trip
// and a thread wake-up, tens of microseconds on a loaded host), at the price
// of log2(n) times the bytes per rank, so the cost model leaves large calls
// to the ring.
//
// Every rank gets the same bits: the two ranks of a pair add the same two
// partial sums, only in swapped order (a OP b == b OP a for the reduction
// operators), so each partial sum is bitwise the same on every rank that
// holds it. With n not a power of two, the ranks past the largest power p
// fold their contribution into rank r - p first and get the result back at
// the end (two more hops).
//
// The plan is one channel cut into rounds of one FIFO piece: within a piece
// each rank sends before it receives from the same peer, and a piece fits in
// one slot, so no rank waits on a full FIFO whose reader waits on it.
#pragma once

#include "algorithms/registry.h"

namespace weft::algo {

inline constexpr const char* kRecursiveDoublingName = "doubling";

// The registry entry (appended to builtinAlgos()).
AlgoInfo recursiveDoublingAlgo();
plan::Plan buildRecursiveDoubling(const CollArgs& a);

}  // namespace weft::algo
