// ncclGather and ncclScatter (NCCL 2.28): weft has no rooted gather or
// scatter collective, so each is one weft group of point-to-point calls:
// every rank sends its block to the root (Gather) or receives it from the
// root (Scatter), and the root posts the matching half for every rank. The
// root's own block is a send/receive pair with itself, which weft's p2p
// plan turns into a copy (on the stream, for device buffers), and is skipped
// when the call is in place. Called inside the caller's ncclGroupStart/End,
// the calls join that group.
#include <cstddef>
#include <cstdint>

#include "bindings/nccl/nccl_compat.h"
#include "src/util/log.h"

using weft::nccl::toNccl;
using weft::nccl::toWeft;

namespace {

// Bytes per element, by ncclDataType_t value (the caller's integer, see
// abiInt); 0 for a value that is none.
size_t elementBytes(int t) {
  static const size_t bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  static_assert(sizeof(bytes) / sizeof(bytes[0]) == ncclNumTypes, "one size per data type");
  return t >= 0 && t < ncclNumTypes ? bytes[t] : 0;
}

struct Rooted {
  const char* fn;
  bool gather;  // else scatter
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  int type;  // the datatype argument as the caller's integer (abiInt)
  int root;
  ncclComm_t comm;
  cudaStream_t stream;
};

// Checks what weft's own calls would only notice after some of them were
// queued: the root and the type (whose size the block offsets need).
ncclResult_t check(const Rooted& c, int* rank, int* nranks) {
  if (ncclResult_t r = toNccl(weftCommCount(toWeft(c.comm), nranks))) return r;
  if (ncclResult_t r = toNccl(weftCommUserRank(toWeft(c.comm), rank))) return r;
  if (c.root < 0 || c.root >= *nranks) {
    WEFT_WARN("%s: root %d is out of range for %d ranks", c.fn, c.root, *nranks);
    return ncclInvalidArgument;
  }
  if (elementBytes(c.type) == 0) {
    WEFT_WARN("%s: datatype %d is not an ncclDataType_t (0 to %d)", c.fn, c.type, ncclNumTypes - 1);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t runRooted(const Rooted& c) {
  int rank = 0, nranks = 0;
  if (ncclResult_t r = check(c, &rank, &nranks)) return r;
  const size_t block = c.count * elementBytes(c.type);
  // The root's many-block buffer: recvbuff for Gather, sendbuff for Scatter.
  const char* many = static_cast<const char*>(c.gather ? c.recvbuff : c.sendbuff);
  const void* own = c.gather ? c.sendbuff : c.recvbuff;
  const bool inPlace = rank == c.root && many && own == many + size_t(c.root) * block;
  const weftComm_t comm = toWeft(c.comm);
  const auto type = static_cast<weftDataType_t>(c.type);  // in range: check() passed
  const weftStream_t stream = toWeft(c.stream);
  if (ncclResult_t r = toNccl(weftGroupStart())) return r;
  weftResult_t first = weftSuccess;
  auto keep = [&](weftResult_t r) {
    if (first == weftSuccess) first = r;
  };
  if (!(inPlace)) {
    if (c.gather) keep(weftSend(c.sendbuff, c.count, type, c.root, comm, stream));
    else keep(weftRecv(c.recvbuff, c.count, type, c.root, comm, stream));
  }
  for (int peer = 0; rank == c.root && peer < nranks && first == weftSuccess; peer++) {
    if (peer == rank && inPlace) continue;
    char* at = const_cast<char*>(many) + size_t(peer) * block;
    if (c.gather) keep(weftRecv(at, c.count, type, peer, comm, stream));
    else keep(weftSend(at, c.count, type, peer, comm, stream));
  }
  // The group is closed even after a failed call, so the caller's thread is
  // not left inside it.
  weftResult_t end = weftGroupEnd();
  return toNccl(first != weftSuccess ? first : end);
}

}  // namespace

extern "C" {

ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return runRooted(Rooted{"ncclGather", true, sendbuff, recvbuff, count, weft::abiInt(datatype), root, comm, stream});
}

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  return runRooted(Rooted{"ncclScatter", false, sendbuff, recvbuff, count, weft::abiInt(datatype), root, comm, stream});
}

}  // extern "C"

WEFT_NCCL_PROFILING_ALIAS(ncclGather)
WEFT_NCCL_PROFILING_ALIAS(ncclScatter)
