// Shared by the files of libnccl.so.2: the casts between NCCL's and weft's
// types (identical values; weft mirrors NCCL) and the pnccl alias macro.
#pragma once

#include "bindings/nccl/nccl.h"
#include "src/util/abi_enum.h"
#include "weft/weft.h"

namespace weft::nccl {

inline weftComm_t toWeft(ncclComm_t comm) { return reinterpret_cast<weftComm_t>(comm); }
inline ncclComm_t toNccl(weftComm_t comm) { return reinterpret_cast<ncclComm_t>(comm); }
inline weftStream_t toWeft(cudaStream_t s) { return reinterpret_cast<weftStream_t>(s); }

// A data type or op from a C caller, which may be any int: checked as that
// integer (abiInt) before it becomes weft's enum, since an int outside a C++
// enum's range cannot be held by it. False, with a log line naming fn, the
// argument and its value, when out of range (the caller returns
// ncclInvalidArgument). User-created ops (>= ncclNumOps) pass on to weft,
// which knows which exist.
bool toWeft(const char* fn, ncclDataType_t type, weftDataType_t* out);
bool toWeft(const char* fn, ncclRedOp_t op, weftRedOp_t* out);

// NCCL has no timeout code; a peer that stops answering is what
// ncclRemoteError stands for. ncclGetLastError still says "timeout".
inline ncclResult_t toNccl(weftResult_t r) {
  if (r == weftTimeout) return ncclRemoteError;
  return static_cast<ncclResult_t>(r);
}

}  // namespace weft::nccl

// NCCL's profiling interface: every ncclX is also exported as pncclX, so
// tools that interpose on ncclX can still reach the real function. An alias
// must sit in the file that defines its target.
#define WEFT_NCCL_PROFILING_ALIAS(name) \
  extern "C" WEFT_NCCL_API decltype(name) p##name __attribute__((alias(#name)));
