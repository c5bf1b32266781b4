// WEFT_CHECK=1: before every collective, the ranks compare what they were
// asked to do (collective, count, type, reduction, root, buffer kind) over
// the bootstrap, and a mismatch fails the call on every rank with a message
// naming the ranks and their calls. Without it, mismatched calls show up
// late and obscurely: a size error at the first received piece, a wrong
// result, or a wait until the timeout. Costs one small all-gather per call,
// so it is a debugging switch, off by default.
#pragma once

#include <cstdint>
#include <string>

#include "src/core/op.h"

struct weftComm;

namespace weft {

struct CallSignature {
  uint64_t seq = 0;  // collectives this communicator ran before this one
  uint64_t count = 0;
  int32_t coll = 0;
  int32_t type = 0;
  int32_t opKind = -1;  // -1: the collective takes no reduction
  int32_t root = -1;    // -1: not rooted
  int32_t device = 0;
  int32_t pad = 0;
};

CallSignature signatureOf(const OpDesc& op, uint64_t seq);
// "AllReduce count 1000 float32 sum (host buffers)"
std::string describeSignature(const CallSignature& s);
// Empty when all nranks signatures agree; else the error text.
std::string compareSignatures(const CallSignature* all, int nranks);

// Gathers every rank's signature of this call and throws weftInvalidUsage
// when they differ. Called only when the communicator has WEFT_CHECK on.
void checkCallAcrossRanks(weftComm* comm, const OpDesc& op);

}  // namespace weft
