// What distinguishes one perf binary from another, as data: buffer shapes,
// bandwidth factors and the expected result of each collective. Pure: no
// library calls, so it is unit-tested without communicators.
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/collectives.h"

namespace weft::bench {

// The library's collectives; their facts come from plan::collInfo.
using CollKind = plan::Coll;

// Element counts of one test size, as nccl-tests derives them.
struct Shape {
  size_t sendCount = 0;          // elements in the send buffer
  size_t recvCount = 0;          // elements in the receive buffer
  size_t paramCount = 0;         // the count argument passed to the collective
  size_t sendInplaceOffset = 0;  // in place: send = recv + rank * this
  size_t recvInplaceOffset = 0;  // in place: recv = send + rank * this
};

const char* testName(CollKind kind);  // "all_reduce_perf", ...
bool usesOp(CollKind kind);           // prints "none" in the redop column otherwise
bool isRooted(CollKind kind);         // prints the root, else -1
// Whether the API defines the in-place result (weft stages an in-place
// AlltoAll through a copy; SendRecv in place has no defined result). With
// send == recv read and write the same bytes from different peers at once:
// the in-place column is timed, as nccl-tests does, but not checked (N/A).
bool inPlaceDefined(CollKind kind);

// bytes: the requested size of the sweep step; eltSize: bytes per element.
Shape shapeFor(CollKind kind, size_t bytes, size_t eltSize, int nranks);
// The "size" column: the larger buffer, in bytes.
size_t reportedBytes(CollKind kind, const Shape& shape, size_t eltSize);
// Bytes that algbw is computed from, and the algbw -> busbw factor.
double algBytes(CollKind kind, const Shape& shape, size_t eltSize, int nranks);
double busFactor(CollKind kind, int nranks);

}  // namespace weft::bench
