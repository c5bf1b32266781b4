#include "benchmarks/common/collective.h"

#include <algorithm>

namespace weft::bench {

const char* testName(CollKind kind) {
  switch (kind) {
    case CollKind::AllReduce: return "all_reduce_perf";
    case CollKind::ReduceScatter: return "reduce_scatter_perf";
    case CollKind::AllGather: return "all_gather_perf";
    case CollKind::Broadcast: return "broadcast_perf";
    case CollKind::Reduce: return "reduce_perf";
    case CollKind::AlltoAll: return "alltoall_perf";
    case CollKind::SendRecv: return "sendrecv_perf";
  }
  return "?";
}

bool usesOp(CollKind kind) {
  return kind == CollKind::AllReduce || kind == CollKind::ReduceScatter || kind == CollKind::Reduce;
}

bool inPlaceDefined(CollKind kind) { return kind != CollKind::SendRecv; }

bool isRooted(CollKind kind) { return kind == CollKind::Broadcast || kind == CollKind::Reduce; }

Shape shapeFor(CollKind kind, size_t bytes, size_t eltSize, int nranks) {
  const size_t count = bytes / eltSize;
  const auto n = static_cast<size_t>(nranks);
  // Per-rank blocks are rounded down to 16 bytes, as nccl-tests does, so
  // every block starts aligned.
  const size_t alignElts = std::max<size_t>(1, 16 / eltSize);
  const size_t block = (count / n) / alignElts * alignElts;
  Shape s;
  switch (kind) {
    case CollKind::AllReduce:
    case CollKind::Broadcast:
    case CollKind::Reduce:
    case CollKind::SendRecv:
      s.sendCount = s.recvCount = s.paramCount = count;
      break;
    case CollKind::ReduceScatter:
      s.sendCount = block * n;
      s.recvCount = s.paramCount = block;
      s.recvInplaceOffset = block;
      break;
    case CollKind::AllGather:
      s.sendCount = s.paramCount = block;
      s.recvCount = block * n;
      s.sendInplaceOffset = block;
      break;
    case CollKind::AlltoAll:
      s.sendCount = s.recvCount = block * n;
      s.paramCount = block;
      break;
  }
  return s;
}

size_t reportedBytes(CollKind, const Shape& shape, size_t eltSize) {
  return std::max(shape.sendCount, shape.recvCount) * eltSize;
}

double algBytes(CollKind kind, const Shape& shape, size_t eltSize, int nranks) {
  switch (kind) {
    case CollKind::ReduceScatter: return static_cast<double>(shape.sendCount * eltSize);
    case CollKind::AllGather: return static_cast<double>(shape.recvCount * eltSize);
    case CollKind::AlltoAll: return static_cast<double>(shape.paramCount * eltSize) * nranks;
    default: return static_cast<double>(shape.paramCount * eltSize);
  }
}

double busFactor(CollKind kind, int nranks) {
  const double n = nranks;
  switch (kind) {
    case CollKind::AllReduce: return 2.0 * (n - 1) / n;
    case CollKind::ReduceScatter:
    case CollKind::AllGather:
    case CollKind::AlltoAll: return (n - 1) / n;
    default: return 1.0;
  }
}

}  // namespace weft::bench
