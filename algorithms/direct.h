// Single-copy collectives for ranks on one host whose buffers every rank can
// address (weftMemAlloc memory registered with the communicator, or
// registered memory of threads of one process): plans of Direct and Barrier
// steps (plan::StepKind), no FIFO.
//
//   AllReduce: each rank owns a share of the buffer; for each chunk of its
//     share it reduces every rank's input straight into its own output
//     (starting with its own input, so an in-place call reads it before
//     writing), then copies the result into every peer's output.
//   ReduceScatter: each rank reduces its block of every rank's input into
//     its own output.
//   AllGather: each rank copies every rank's input into its own output.
// A barrier opens the plan (every input is there, every output free) and
// one closes it (nobody returns while a peer still reads or writes its
// buffers). One rank alone copies.
//
// Which calls run these plans, and how ranks agree on it, is
// src/core/direct_comm.h; the host executor runs them with the peers'
// buffer addresses (HostExecContext::direct).
#pragma once

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft::algo {

inline constexpr const char* kDirectName = "direct";
// Bytes a reduction chunk covers before its result is copied out: the
// result is copied while it is still in cache (or the plan's slot size, when
// smaller).
inline constexpr uint64_t kDirectChunkBytes = 128 * 1024;

bool directSupports(plan::Coll c);
// Throws weftInvalidArgument for a collective it does not support.
plan::Plan buildDirect(const CollArgs& a);

}  // namespace weft::algo
