// One collective call on one rank, checked against the reference.
//
// Every rank derives every rank's inputs from the same seed, so a rank (a
// thread or a separate process) can check its own output alone.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

enum class CollKind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll, SendRecv };
// Every collective the checks cover, and those with an in-place form.
inline constexpr CollKind kAllColls[] = {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::AllGather,
                                         CollKind::Broadcast, CollKind::Reduce,        CollKind::AllToAll,
                                         CollKind::SendRecv};
constexpr bool hasInPlace(CollKind c) { return c != CollKind::AllToAll && c != CollKind::SendRecv; }
const char* collKindName(CollKind c);

struct Scenario {
  CollKind coll = CollKind::AllReduce;
  weftDataType_t type = weftFloat32;
  weftRedOp_t op = weftSum;  // weftNumOps means "a PreMulSum created for this call"
  bool inPlace = false;
  size_t count = 0;
  int root = 0;
  uint64_t seed = 1;
  weftStream_t stream = nullptr;  // NULL or a host stream
  // Buffers from weftMemAlloc, registered with the communicator for the call
  // (the single-copy path where every rank's are).
  bool registered = false;
  std::string describe() const;
};

constexpr weftRedOp_t kPreMulSum = weftNumOps;

// Every rank's input for a scenario (deterministic in the seed).
using Inputs = std::vector<std::vector<unsigned char>>;
Inputs makeInputs(const Scenario& s, int n);

// Runs the scenario on comm (rank `rank` of n) and checks this rank's
// output. Returns "" when everything matched, else a description of the
// first mismatches (and of errors returned by the API). `inputs` may be
// shared by thread ranks; when null they are generated here.
std::string runAndCheck(weftComm_t comm, int rank, int n, const Scenario& s, const Inputs* inputs = nullptr);

// Checks that a scenario gives bit-identical outputs across the ranks that
// share a result (AllReduce): returns a digest of this rank's output.
uint64_t lastOutputDigest();

}  // namespace weft::test
