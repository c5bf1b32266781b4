#include "benchmarks/common/collective.h"

#include <algorithm>

namespace weft::bench {

const char* testName(CollKind kind) { return plan::collInfo(kind).perfTest; }

bool usesOp(CollKind kind) { return plan::collInfo(kind).reduces; }

bool inPlaceDefined(CollKind kind) { return kind != CollKind::SendRecv; }

bool isRooted(CollKind kind) { return plan::collInfo(kind).rooted; }

Shape shapeFor(CollKind kind, size_t bytes, size_t eltSize, int nranks) {
  const size_t count = bytes / eltSize;
  const auto n = static_cast<size_t>(nranks);
  // Per-rank blocks are rounded down to 16 bytes, as nccl-tests does, so
  // every block starts aligned.
  const size_t alignElts = std::max<size_t>(1, 16 / eltSize);
  const size_t block = (count / n) / alignElts * alignElts;
  const plan::CollInfo& info = plan::collInfo(kind);
  Shape s;
  // A gathered buffer holds one block per rank; the count is one block.
  s.paramCount = info.sendTimesRanks || info.recvTimesRanks ? block : count;
  s.sendCount = plan::sendElems(kind, s.paramCount, nranks);
  s.recvCount = plan::recvElems(kind, s.paramCount, nranks);
  // In place, the smaller buffer is this rank's block of the larger one.
  if (info.sendTimesRanks && !info.recvTimesRanks) s.recvInplaceOffset = s.paramCount;
  if (info.recvTimesRanks && !info.sendTimesRanks) s.sendInplaceOffset = s.paramCount;
  return s;
}

size_t reportedBytes(CollKind, const Shape& shape, size_t eltSize) {
  return std::max(shape.sendCount, shape.recvCount) * eltSize;
}

double algBytes(CollKind kind, const Shape& shape, size_t eltSize, int nranks) {
  return static_cast<double>(plan::largestBufferElems(kind, shape.paramCount, nranks) * eltSize);
}

double busFactor(CollKind kind, int nranks) { return plan::collInfo(kind).busFactor(nranks); }

}  // namespace weft::bench
