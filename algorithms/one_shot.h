// The one-shot algorithm ("oneshot"): every rank publishes its whole
// contribution to every peer at once, and every rank that needs a result
// reads all contributions and reduces them itself. One step instead of a
// ring's 2(n-1), at the price of (n-1) times the bytes read per rank: it
// wins for small messages. Two protocols carry it (algorithms/protocols.h):
// `ll` on ranks that share one host (src/exec/host/ll_protocol.{h,cc}, which
// reduces in rank order so that every rank gets the same bits), and
// `simple`, where the plan below runs on FIFO slots like any other: the
// one network round trip a small call over sockets needs, instead of the
// ring's 2(n-1) hops. Its own cost estimate is oneShotFifoUs.
//
// buildOneShot gives the algorithm's data flow as a plan (one channel, the
// call cut into rounds of one FIFO piece: a round sends the rank's piece to
// every peer that needs it, then receives and reduces). The LL executor does
// not run plans; the plan is what the verifier checks, for every collective
// and rank count, in and out of place.
#pragma once

#include <optional>

#include "algorithms/registry.h"

namespace weft::algo {

inline constexpr const char* kOneShotName = "oneshot";

// The registry entry (appended to builtinAlgos()).
AlgoInfo oneShotAlgo();
plan::Plan buildOneShot(const CollArgs& a);
// Whether a is the one-shot algorithm (looked up by name once: ids follow the
// order of the registry).
bool isOneShot(AlgoId a);
std::optional<AlgoId> oneShotId();

// The most ranks the plan runs over FIFOs for. Its ranks fold the
// contributions in different orders (each its own first), which gives every
// rank the same bits only while there are two of them (a+b == b+a); beyond,
// it would need a local reduce step to fold in rank order.
inline constexpr int kOneShotFifoMaxRanks = 2;

// The estimate of the one-shot plan on FIFO slots (the `simple` protocol):
// one hop plus half a hop per further peer (the sends to n-1 peers go out
// one by one), and every byte moved twice (into a slot, out of it) per
// peer. Never below `llUs`, the algorithm's estimate under `ll` where that
// is finite (one host): the FIFO hop costs more than ll's polled lines, so
// where ll can run it wins. +infinity past kOneShotFifoMaxRanks.
// (With two ranks only AllReduce gains: the others' rings are one hop too.)
double oneShotFifoUs(plan::Coll c, const CostInputs& in, double llUs);

}  // namespace weft::algo
