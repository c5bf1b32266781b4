// NCCL 2.2x functions weft has no way to do. Each checks its arguments as
// NCCL would, then returns ncclInvalidUsage with a WARN line (also what
// ncclGetLastError returns) that says what weft lacks and what to use
// instead, so a program built against NCCL 2.28 loads and fails clearly
// only if it calls one of them.
#include <cstddef>

#include "bindings/nccl/nccl_compat.h"
#include "src/util/log.h"

using weft::nccl::toNccl;
using weft::nccl::toWeft;

namespace {

constexpr unsigned kSimInfoMagic = 0x74685283u;

// ncclSuccess when comm is a live communicator, else weft's own error.
ncclResult_t checkComm(ncclComm_t comm) {
  int count = 0;
  return toNccl(weftCommCount(toWeft(comm), &count));
}

}  // namespace

extern "C" {

// weft's split is collective over every rank of the parent, and NCCL's
// excluded ranks (often dead ones) do not call shrink, so it cannot be
// built from a split.
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t*, int shrinkFlags) {
  if (newcomm) *newcomm = nullptr;
  if (ncclResult_t r = checkComm(comm)) return r;
  if (!newcomm || excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList)) return ncclInvalidArgument;
  WEFT_WARN("ncclCommShrink (flags 0x%x, %d excluded ranks): weft cannot rebuild a communicator without some of "
            "its ranks; create a new one with ncclCommInitRank, or ncclCommSplit while every rank is alive",
            shrinkFlags, excludeRanksCount);
  return ncclInvalidUsage;
}

ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  if (ncclResult_t r = checkComm(comm)) return r;
  if (revokeFlags != NCCL_REVOKE_DEFAULT) return ncclInvalidArgument;
  WEFT_WARN("ncclCommRevoke: weft cannot stop a communicator's operations and keep it; ncclCommAbort stops "
            "them and frees it");
  return ncclInvalidUsage;
}

// NCCL's device API lets kernels of the application's own drive NCCL's
// memory windows and barriers from the GPU; weft has no device-side API.
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs, struct ncclDevComm* out) {
  if (ncclResult_t r = checkComm(comm)) return r;
  if (!reqs || !out) return ncclInvalidArgument;
  WEFT_WARN("ncclDevCommCreate: weft has no NCCL device API (nccl_device.h): kernels that call NCCL from the GPU "
            "cannot run on it; use the host collectives");
  return ncclInvalidUsage;
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm* devComm) {
  if (ncclResult_t r = checkComm(comm)) return r;
  if (!devComm) return ncclInvalidArgument;
  WEFT_WARN("ncclDevCommDestroy: weft has no NCCL device API, so no device communicator was created");
  return ncclInvalidUsage;
}

// weft's groups run when they end; none can be ended without running, so
// the group stays open for the caller's ncclGroupEnd.
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (!simInfo || simInfo->size < offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float) ||
      simInfo->magic != kSimInfoMagic) {
    WEFT_WARN("ncclGroupSimulateEnd: simInfo was not set up with NCCL_SIM_INFO_INITIALIZER");
    return ncclInvalidArgument;
  }
  WEFT_WARN("ncclGroupSimulateEnd: weft cannot simulate a group (the group stays open; end it with ncclGroupEnd)");
  return ncclInvalidUsage;
}

}  // extern "C"

WEFT_NCCL_PROFILING_ALIAS(ncclCommShrink)
WEFT_NCCL_PROFILING_ALIAS(ncclCommRevoke)
WEFT_NCCL_PROFILING_ALIAS(ncclGroupSimulateEnd)
WEFT_NCCL_PROFILING_ALIAS(ncclDevCommCreate)
WEFT_NCCL_PROFILING_ALIAS(ncclDevCommDestroy)
