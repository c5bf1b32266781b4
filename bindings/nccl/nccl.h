/*
 * nccl.h for weft's NCCL-compatible library (libnccl.so.2).
 *
 * Declares every host function of the NCCL 2.28 C API, with NCCL's names,
 * values and struct layouts, so that a program written for NCCL compiles
 * against this header and runs on weft, and one built against NVIDIA's
 * nccl.h finds every symbol it may call. Most functions are a thin forward
 * to their weft twin (include/weft/weft.h); the few weft cannot do return
 * ncclInvalidUsage with a WARN line; docs/clients.md lists both.
 *
 * The version reported stays 2.19.3: nccl-tests built against a 2.28
 * header expects NCCL's device-side API (nccl_device.h), which weft does
 * not have, and run-time version checks should not assume 2.2x features.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <stddef.h>
#include <stdint.h>

/* With CUDA's headers on the include path, nccl.h brings in the CUDA
 * runtime and its half/bfloat16 types, as NVIDIA's does (nccl-tests relies on
 * that). Without them, cudaStream_t is declared here so host-only programs
 * compile; define WEFT_NCCL_NO_CUDA_HEADERS to force that. The guard skips
 * the typedef when cuda_runtime.h was included first. */
#if !defined(WEFT_NCCL_NO_CUDA_HEADERS) && defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if defined(CUDART_VERSION) && CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#endif
#endif
#if !defined(__CUDA_RUNTIME_H__) && !defined(__DRIVER_TYPES_H__) && !defined(WEFT_NCCL_CUDA_STREAM_DECLARED)
#define WEFT_NCCL_CUDA_STREAM_DECLARED
typedef struct CUstream_st* cudaStream_t;
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 19
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 21903
/* NCCL encodes versions before 2.9 with two digits for the minor number. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#if defined(__GNUC__)
#define WEFT_NCCL_API __attribute__((visibility("default")))
#else
#define WEFT_NCCL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR (-1)
#define NCCL_UNDEF_FLOAT (-1.0f)

/* ncclCommWindowRegister flags (weft registers nothing; both are accepted). */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values (accepted and ignored). */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink and ncclCommRevoke flags. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_REVOKE_DEFAULT 0x00

/* The 2.28 layout. Every earlier, shorter version (2.14's ends at netName,
 * 2.17's at splitShare, ...) is accepted too: the library reads a config
 * only up to the size it was given. Honoured: blocking (0 is accepted; init
 * still completes before the call returns), minCTAs, maxCTAs, netName,
 * commName (the name in weft's log lines). The rest is accepted and ignored
 * (trafficClass too: NCCL_IB_TC sets it for the whole process). */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                    \
  {                                                                                                \
    sizeof(ncclConfig_t), 0xcafebeefu, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),           \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                               \
  }

/* For ncclGroupSimulateEnd, which weft does not provide. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283u, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Every function also exists as pnccl<Name> (NCCL's profiling interface). */
WEFT_NCCL_API ncclResult_t ncclMemAlloc(void** ptr, size_t size);
WEFT_NCCL_API ncclResult_t ncclMemFree(void* ptr);

WEFT_NCCL_API ncclResult_t ncclGetVersion(int* version);
WEFT_NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
WEFT_NCCL_API const char* ncclGetErrorString(ncclResult_t result);
WEFT_NCCL_API const char* ncclGetLastError(ncclComm_t comm);
/* A no-op: weft reads its log settings once per process. */
WEFT_NCCL_API void ncclResetDebugInit(void);

WEFT_NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                  ncclConfig_t* config);
WEFT_NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
WEFT_NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
/* Uses commIds[0] (every rank passes the same list); weft's bootstrap needs
 * no more than one root. */
WEFT_NCCL_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                    ncclUniqueId* commIds, ncclConfig_t* config);
WEFT_NCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                         ncclConfig_t* config);
/* Not in weft: ncclInvalidUsage (a WARN line says why). */
WEFT_NCCL_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                          ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
/* Waits for every operation queued on comm; ncclCommDestroy then frees it. */
WEFT_NCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm);
WEFT_NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm);
WEFT_NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm);
/* Not in weft: ncclInvalidUsage (ncclCommAbort stops in-flight operations). */
WEFT_NCCL_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
/* NCCL 2.28's device API (NVIDIA's nccl_device.h) is not in weft: these two
 * host calls exist so that a program built against that header links and
 * loads, and fail with ncclInvalidUsage (a WARN line says why). */
struct ncclDevCommRequirements;
struct ncclDevComm;
WEFT_NCCL_API ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs,
                                             struct ncclDevComm* outDevComm);
WEFT_NCCL_API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm* devComm);
WEFT_NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
WEFT_NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
WEFT_NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
WEFT_NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);

/* Registration is a no-op in weft: the handle is a token to deregister. */
WEFT_NCCL_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
WEFT_NCCL_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
/* Likewise for windows: the window is a token to deregister, not a mapping
 * (weft has no device-side API that could use one). */
WEFT_NCCL_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                  int winFlags);
WEFT_NCCL_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

WEFT_NCCL_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                    ncclScalarResidence_t residence, ncclComm_t comm);
WEFT_NCCL_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

WEFT_NCCL_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
/* Broadcast in place. */
WEFT_NCCL_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                             cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* Grouped Send/Recv to or from the root. In place when sendbuff ==
 * recvbuff + root * count (Gather) or recvbuff == sendbuff + root * count
 * (Scatter), counts in elements. */
WEFT_NCCL_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclComm_t comm, cudaStream_t stream);
WEFT_NCCL_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclComm_t comm, cudaStream_t stream);

WEFT_NCCL_API ncclResult_t ncclGroupStart(void);
WEFT_NCCL_API ncclResult_t ncclGroupEnd(void);
/* Not in weft (it cannot end a group without running it): ncclInvalidUsage,
 * and the group stays open. */
WEFT_NCCL_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
