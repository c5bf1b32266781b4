// The one-shot algorithm ("oneshot"): every rank publishes its whole
// contribution to every peer at once, and every rank that needs a result
// reads all contributions and reduces them itself. One step instead of a
// ring's 2(n-1), at the price of (n-1) times the bytes read per rank: it
// wins for small messages. It runs only under the `ll` protocol
// (algorithms/protocols.h), on ranks that share one host; the host executor
// for it is src/exec/host/ll_protocol.{h,cc}, which reduces in rank order so
// that every rank gets the same bits.
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

}  // namespace weft::algo
