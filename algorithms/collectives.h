// The collectives as data: one row per plan::Coll holding everything the
// layers above the plans ask about a collective (its names, whether it takes
// a reduction or a root, its buffer sizes, the nccl-tests bus-bandwidth
// factor). Validation, the selector, the tools and the perf binaries read
// this table instead of switching on plan::Coll, so a new collective is a
// new row here plus its plan builders. Pure data: the perf binaries link it
// without the library.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "algorithms/plan.h"

namespace weft::plan {

constexpr int kNumColls = 7;

struct CollInfo {
  Coll coll;
  const char* name;      // "AllReduce": logs and messages
  const char* key;       // "allreduce": WEFT_ALGO / WEFT_PROTO entries, tool options
  const char* perfTest;  // "all_reduce_perf": the nccl-tests binary that measures it
  bool reduces;          // takes a reduction operation
  bool rooted;           // takes a root rank
  // Buffer sizes as multiples of the call's `count`: x nranks where set.
  bool sendTimesRanks;
  bool recvTimesRanks;
  // Rooted collectives: only the root passes a send (Broadcast) or a
  // receive buffer (Reduce); other ranks may pass NULL.
  bool sendAtRootOnly;
  bool recvAtRootOnly;
  // Its plan comes from a fixed point-to-point builder (algorithms/p2p.h),
  // never from an algorithm the selector chooses.
  bool fixedPlan;
  // nccl-tests' factor from algorithm bandwidth to bus bandwidth.
  double (*busFactor)(int nranks);
};

const CollInfo& collInfo(Coll c);
// Case-insensitive key ("allreduce", "AllReduce"); nullopt when unknown.
std::optional<Coll> parseColl(std::string_view name);

// Elements of the send / receive buffer of a call with this count.
uint64_t sendElems(Coll c, uint64_t count, int nranks);
uint64_t recvElems(Coll c, uint64_t count, int nranks);
// The larger of the two: nccl-tests' "size" of the call, in elements.
uint64_t largestBufferElems(Coll c, uint64_t count, int nranks);

}  // namespace weft::plan
