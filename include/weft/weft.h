/*
 * weft: collective communication for distributed training.
 *
 * The C API. It mirrors NCCL's API function for function (same names with the
 * `weft` prefix, same parameter order and semantics) so that code written for
 * NCCL ports by renaming, and so that an NCCL-compatible library is a thin
 * layer over this one. Everything here is plain C (C99) and stable.
 *
 * Buffers may live in host memory (executed by the communicator's host
 * executor) or, when built with CUDA, in device memory. See docs/api.md for
 * every function, its errors and the environment variables it reads.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_MAJOR 0
#define WEFT_MINOR 1
#define WEFT_PATCH 0
#define WEFT_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define WEFT_VERSION_CODE WEFT_VERSION(WEFT_MAJOR, WEFT_MINOR, WEFT_PATCH)

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

/* Result codes: the same values as ncclResult_t. */
typedef enum {
  weftSuccess = 0,
  weftUnhandledCudaError = 1,
  weftSystemError = 2,   /* a system call or the OS failed (socket, shm, ...) */
  weftInternalError = 3, /* a bug in weft */
  weftInvalidArgument = 4,
  weftInvalidUsage = 5,  /* a valid argument used wrongly (destroyed comm, ...) */
  weftRemoteError = 6,   /* a peer died, a connection dropped */
  weftInProgress = 7,
  weftTimeout = 8,       /* a wait exceeded WEFT_TIMEOUT_MS */
  weftNumResults = 9
} weftResult_t;

typedef enum {
  weftInt8 = 0,
  weftChar = 0,
  weftUint8 = 1,
  weftInt32 = 2,
  weftInt = 2,
  weftUint32 = 3,
  weftInt64 = 4,
  weftUint64 = 5,
  weftFloat16 = 6,
  weftHalf = 6,
  weftFloat32 = 7,
  weftFloat = 7,
  weftFloat64 = 8,
  weftDouble = 8,
  weftBfloat16 = 9,
  weftFloat8e4m3 = 10,
  weftFloat8e5m2 = 11,
  weftNumTypes = 12
} weftDataType_t;

/* Built-in reduction operations. Values >= weftNumOps are user-created
 * operations (weftRedOpCreatePreMulSum), valid only on their communicator. */
typedef enum {
  weftSum = 0,
  weftProd = 1,
  weftMax = 2,
  weftMin = 3,
  weftAvg = 4,
  weftNumOps = 5,
  weftMaxRedOp = 0x7fffffff
} weftRedOp_t;

typedef enum {
  weftScalarDevice = 0,        /* the scalar is in device memory */
  weftScalarHostImmediate = 1  /* the scalar is read from host memory at creation */
} weftScalarResidence_t;

#define WEFT_UNIQUE_ID_BYTES 128
/* Identifies one communicator: the bootstrap root's address and a random
 * secret that every rank must prove. Create it on one rank with
 * weftGetUniqueId and hand it to every other rank out of band. */
typedef struct {
  char internal[WEFT_UNIQUE_ID_BYTES];
} weftUniqueId;

#define WEFT_SPLIT_NOCOLOR (-1)
#define WEFT_CONFIG_UNDEF_INT (-2147483647 - 1)

typedef struct weftComm* weftComm_t;

/* A stream orders operations. For host buffers it is a weft host stream
 * (weftHostStreamCreate) or NULL, which makes the call block until done. For
 * device buffers it is a cudaStream_t. */
typedef void* weftStream_t;

/* Communicator options (NCCL's ncclConfig_t subset). Initialise with
 * WEFT_CONFIG_INITIALIZER; leave a field undefined for its default. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;          /* 1 (default): init blocks. 0: accepted, init still completes before return */
  int minCTAs;           /* minimum channels */
  int maxCTAs;           /* maximum channels */
  const char* netName;   /* "Socket" or "IB": force the network transport */
  int splitShare;        /* accepted for compatibility */
  int trafficClass;      /* IB traffic class */
  const char* commName;  /* label used in logs */
  int timeoutMs;         /* bound on every wait; overrides WEFT_TIMEOUT_MS */
} weftConfig_t;

#define WEFT_CONFIG_MAGIC 0xcafebeefu
#define WEFT_CONFIG_INITIALIZER                                                  \
  {                                                                              \
    sizeof(weftConfig_t), WEFT_CONFIG_MAGIC, WEFT_VERSION_CODE,                  \
        WEFT_CONFIG_UNDEF_INT, WEFT_CONFIG_UNDEF_INT, WEFT_CONFIG_UNDEF_INT,     \
        NULL, WEFT_CONFIG_UNDEF_INT, WEFT_CONFIG_UNDEF_INT, NULL,                \
        WEFT_CONFIG_UNDEF_INT                                                    \
  }

/* ---- Versions and errors ------------------------------------------------ */

/* Writes WEFT_VERSION_CODE of the library that is loaded. */
WEFT_API weftResult_t weftGetVersion(int* version);
/* A static string describing a result code. Never NULL. */
WEFT_API const char* weftGetErrorString(weftResult_t result);
/* The last error message logged for comm (or by this thread when comm is NULL). */
WEFT_API const char* weftGetLastError(weftComm_t comm);

/* ---- Communicators ------------------------------------------------------- */

/* Creates a unique id and starts the bootstrap root in this process. The root
 * listens on the interface chosen by WEFT_SOCKET_IFNAME (or the address in
 * WEFT_COMM_ID, "<ip>:<port>", in which case rank 0 runs the root). */
WEFT_API weftResult_t weftGetUniqueId(weftUniqueId* uniqueId);
/* Joins communicator `commId` as `rank` of `nranks`. Collective over all ranks;
 * blocks until every rank has joined (bounded by WEFT_TIMEOUT_MS). */
WEFT_API weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank);
WEFT_API weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                             weftConfig_t* config);
/* Creates ndev communicators as ranks of one process (NCCL's single-process
 * mode). devlist names a CUDA device per rank, or is NULL for host ranks. */
WEFT_API weftResult_t weftCommInitAll(weftComm_t* comms, int ndev, const int* devlist);
/* Splits comm: ranks with the same color form a new communicator, ordered by
 * key (then by rank in comm). color WEFT_SPLIT_NOCOLOR yields *newcomm = NULL.
 * Collective over all ranks of comm. */
WEFT_API weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm,
                                    weftConfig_t* config);
/* Waits for all operations queued on comm to finish. */
WEFT_API weftResult_t weftCommFinalize(weftComm_t comm);
/* Frees comm. Operations still queued are finished first (use Abort to drop them). */
WEFT_API weftResult_t weftCommDestroy(weftComm_t comm);
/* Stops all in-flight operations of comm (from any thread) and frees it. */
WEFT_API weftResult_t weftCommAbort(weftComm_t comm);
/* weftSuccess, or the error that stopped an asynchronous operation of comm
 * (a dead peer, a timeout); once set, every later call on comm returns it. */
WEFT_API weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError);
/* Sets up, outside the call path, the connections device calls of comm use:
 * the device FIFOs of every call shape (the ring's on both protocols, trees,
 * AllToAll and point-to-point peers), and the device stream, status word and
 * plan-image memory (WEFT_DEVICE_IMAGE_ARENA), so that later device calls of
 * those shapes, at any count, connect, allocate and register nothing and meet
 * no implicit synchronisation (several ranks on one GPU). Collective: every
 * rank of comm calls it, outside any group and capture; bounded by
 * WEFT_TIMEOUT_MS. Without a GPU it connects the host ends of those edges.
 * Scratch sized by a call (hierarchical plans, Send/Recv to self, in-place
 * AllToAll) is still allocated by the first call that needs it, and a graph
 * captures only calls whose (count, shape) ran once outside capture. */
WEFT_API weftResult_t weftCommWarmup(weftComm_t comm);
/* "Who has not arrived": gathers every rank's state of comm over the
 * bootstrap network (the collective each rank is in or last finished, how far
 * it got, the peer it waits on), logs the report at WARN and writes it to buf,
 * NUL-terminated. Every rank answers from a thread of its own, so this works
 * while ranks (this one too, on another thread) are blocked inside a
 * collective; it waits at most about 2 s, and a rank that does not answer is
 * reported as not answering. buf NULL or len 0: weftInvalidArgument. A report
 * longer than len - 1 bytes is cut to fit and ends in "..." (weftSuccess). */
WEFT_API weftResult_t weftCommDiagnose(weftComm_t comm, char* buf, size_t len);
WEFT_API weftResult_t weftCommCount(const weftComm_t comm, int* count);
WEFT_API weftResult_t weftCommCuDevice(const weftComm_t comm, int* device);
WEFT_API weftResult_t weftCommUserRank(const weftComm_t comm, int* rank);

/* ---- Memory peers can map, and registration ------------------------------- */
/* Host memory that ranks of other processes on this host can map: a named
 * shared-memory segment per allocation (page aligned, zeroed). Collectives on
 * buffers in it that every rank has registered (weftCommRegister) read and
 * write peers' buffers directly instead of copying through FIFOs
 * (docs/api.md). size 0 or ptr NULL: weftInvalidArgument. */
WEFT_API weftResult_t weftMemAlloc(void** ptr, size_t size);
/* Frees weftMemAlloc memory (NULL: nothing). Memory still registered with a
 * communicator: weftInvalidUsage; memory not from weftMemAlloc, or freed
 * already: weftInvalidArgument. */
WEFT_API weftResult_t weftMemFree(void* ptr);
/* Registers [buff, buff+size) with comm (not collective). A collective whose
 * buffers every rank registered, on ranks of one host, runs single-copy.
 * A range overlapping one registered on comm already: weftInvalidArgument. */
WEFT_API weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle);
/* Ends a registration. A handle of another communicator, or deregistered
 * already: weftInvalidArgument; a buffer a collective in flight uses:
 * weftInvalidUsage (the registration stays). After a single-copy call that
 * failed on this rank (a timeout), a slower peer may still be reading or
 * writing its buffers until that peer's call ends too: weftMemAlloc memory
 * may be freed (its pages stay mapped until then), other registered memory
 * must be kept until every rank has returned from the call. */
WEFT_API weftResult_t weftCommDeregister(const weftComm_t comm, void* handle);

/* ---- Reduction operations ----------------------------------------------- */

/* Creates a sum that multiplies every input by *scalar first. */
WEFT_API weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                               weftScalarResidence_t residence, weftComm_t comm);
WEFT_API weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm);

/* ---- Collectives ---------------------------------------------------------- */
/* In place: AllReduce/Broadcast/Reduce when sendbuff == recvbuff;
 * ReduceScatter when recvbuff == sendbuff + rank*recvcount;
 * AllGather when sendbuff == recvbuff + rank*sendcount. */

WEFT_API weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                    weftRedOp_t op, weftComm_t comm, weftStream_t stream);
WEFT_API weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                                        weftStream_t stream);
WEFT_API weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, weftDataType_t datatype,
                                    weftComm_t comm, weftStream_t stream);
WEFT_API weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                    int root, weftComm_t comm, weftStream_t stream);
/* Legacy in-place broadcast. */
WEFT_API weftResult_t weftBcast(void* buff, size_t count, weftDataType_t datatype, int root, weftComm_t comm,
                                weftStream_t stream);
WEFT_API weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                 weftRedOp_t op, int root, weftComm_t comm, weftStream_t stream);
/* Block j (count elements) of sendbuff goes to rank j; block i of recvbuff
 * comes from rank i. */
WEFT_API weftResult_t weftAlltoAll(const void* sendbuff, void* recvbuff, size_t count, weftDataType_t datatype,
                                   weftComm_t comm, weftStream_t stream);
WEFT_API weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer,
                               weftComm_t comm, weftStream_t stream);
WEFT_API weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer, weftComm_t comm,
                               weftStream_t stream);

/* Operations issued between GroupStart and GroupEnd are launched together at
 * GroupEnd, so a batch of sends and receives cannot deadlock. Groups nest. */
WEFT_API weftResult_t weftGroupStart(void);
WEFT_API weftResult_t weftGroupEnd(void);

/* ---- Host streams ---------------------------------------------------------- */
/* An ordered queue of host-buffer operations, executed asynchronously by the
 * communicator's worker so the caller can overlap its own compute. */
WEFT_API weftResult_t weftHostStreamCreate(weftStream_t* stream);
/* Blocks until every operation enqueued on stream has finished; returns the
 * first error any of them hit. */
WEFT_API weftResult_t weftHostStreamSynchronize(weftStream_t stream);
/* weftSuccess when all work on stream is done, weftInProgress otherwise, or
 * the error an operation hit. */
WEFT_API weftResult_t weftHostStreamQuery(weftStream_t stream);
WEFT_API weftResult_t weftHostStreamDestroy(weftStream_t stream);


/* ---- Compressed AllReduce ------------------------------------------------ */
/* An approximate sum over ranks that sends fewer bytes (docs/compression.md).
 * Host buffers; TopK and Sign also device buffers (CUDA builds). */

typedef enum {
  weftCompressNone = 0, /* no compression (a weftReducer's default); not a compressor kind */
  weftCompressBf16 = 1, /* the ring with bfloat16 on the wire, float32 reductions */
  weftCompressFp16 = 2, /* the ring with float16 on the wire (overflows past 65504) */
  weftCompressTopK = 3, /* the ratio largest-magnitude entries per rank, all-gathered */
  weftCompressSign = 4  /* 1 bit per entry plus a scale per chunk, two phases */
} weftCompressKind_t;

typedef struct weftCompressor* weftCompressor_t;

/* Initialise with WEFT_COMPRESS_CONFIG_INITIALIZER, then set kind. */
typedef struct {
  size_t size;
  unsigned int magic;
  int kind;          /* a weftCompressKind_t other than weftCompressNone: required */
  double ratio;      /* TopK: fraction of entries each rank sends, 0 < ratio <= 1; default 0.01 */
  int errorFeedback; /* 1: keep what was not sent and add it to the next call's input.
                        Default 1 for TopK and Sign; bf16/fp16 take only 0 */
} weftCompressConfig;

#define WEFT_COMPRESS_CONFIG_MAGIC 0xc0de5e1fu
#define WEFT_COMPRESS_UNDEF_RATIO (-1.0)
#define WEFT_COMPRESS_CONFIG_INITIALIZER                                                   \
  {                                                                                        \
    sizeof(weftCompressConfig), WEFT_COMPRESS_CONFIG_MAGIC, weftCompressNone,              \
        WEFT_COMPRESS_UNDEF_RATIO, WEFT_CONFIG_UNDEF_INT                                   \
  }

/* Creates a compressor for AllReduces of `count` elements of `datatype`
 * on comm (weftFloat32; TopK and Sign also weftFloat16 and weftBfloat16,
 * computed in float32 and rounded once into the buffer); it holds the error-feedback residual of one
 * gradient buffer (or bucket). Collective over comm: every rank must pass the
 * same count, datatype and config, or every rank gets weftInvalidUsage. */
WEFT_API weftResult_t weftCompressorCreate(weftComm_t comm, size_t count, weftDataType_t datatype,
                                           const weftCompressConfig* config, weftCompressor_t* compressor);
/* recvbuff = the sum over ranks of sendbuff (count elements), approximated
 * by the compressor's scheme. In place when sendbuff == recvbuff. Ordered on
 * a host stream like the collectives, or blocking with a NULL stream; with
 * device buffers (TopK, Sign), queued on the cudaStream_t. A compressor
 * serves the buffer kind (host or device) of its first call. */
WEFT_API weftResult_t weftCompressedAllReduce(const void* sendbuff, void* recvbuff, weftCompressor_t compressor,
                                              weftStream_t stream);
/* The compressor's residual, float32: in host memory it owns, or in device
 * memory once a call with device buffers bound the compressor to them: the count
 * entries not yet sent by this rank, then (Sign) the entries of this rank's
 * chunk not yet sent by its second phase. *count receives the total, 0 for
 * bf16/fp16 and without error feedback. Read it to checkpoint, write it to
 * restore; not while an operation of the compressor is queued. */
WEFT_API weftResult_t weftCompressorResidual(weftCompressor_t compressor, float** residual, size_t* count);
/* Zeroes the residual (not collective). */
WEFT_API weftResult_t weftCompressorReset(weftCompressor_t compressor);
/* Bytes this rank has sent for the compressor's calls so far (all phases). */
WEFT_API weftResult_t weftCompressorBytesSent(weftCompressor_t compressor, uint64_t* bytes);
WEFT_API weftResult_t weftCompressorDestroy(weftCompressor_t compressor);

/* ---- Bucketed reducer ------------------------------------------------------ */
/* Groups gradient buffers into buckets and runs each bucket's AllReduce on a
 * thread of the reducer as soon as all its buffers are marked ready, while
 * the caller goes on computing (docs/compression.md). The buffers are all
 * host memory or all on one GPU; for GPU buffers each bucket is packed,
 * reduced and unpacked on the reducer's own CUDA stream, after the work
 * that produced its gradients (weftReducerMarkReadyOnStream). */

typedef struct weftReducer* weftReducer_t;

typedef struct {
  size_t size;
  unsigned int magic;
  long long bucketBytes;      /* default 25 MiB */
  long long firstBucketBytes; /* default 1 MiB: the first bucket to fill starts early */
  int average;                /* 1: divide the sum by nranks; default 0 (sum) */
  int compress;               /* a weftCompressKind_t; default weftCompressNone */
  double ratio;               /* the compressors' ratio (TopK) */
  int errorFeedback;          /* the compressors' error feedback */
} weftReducerConfig;

#define WEFT_REDUCER_CONFIG_MAGIC 0xb0c4e75u
#define WEFT_REDUCER_CONFIG_INITIALIZER                                                     \
  {                                                                                         \
    sizeof(weftReducerConfig), WEFT_REDUCER_CONFIG_MAGIC, -1, -1, WEFT_CONFIG_UNDEF_INT,     \
        weftCompressNone, WEFT_COMPRESS_UNDEF_RATIO, WEFT_CONFIG_UNDEF_INT                  \
  }

/* Measured overlap. Step: from the previous Wait's return (the first
 * MarkReady for the first step) to this Wait's return. */
typedef struct {
  unsigned long long steps;
  double stepMs;          /* the last step's length */
  double commMs;          /* time the reducer's thread spent on the last step's buckets */
  double hiddenMs;        /* of commMs, the part before the caller entered Wait */
  double waitMs;          /* time the caller spent in the last Wait */
  double exposedFraction; /* waitMs / stepMs: communication not hidden by compute */
  double totalStepMs, totalCommMs, totalHiddenMs, totalWaitMs; /* sums over all steps */
} weftReducerStats;

/* Registers nbuffers gradient buffers (buffers[i], counts[i] elements of
 * datatype each); results are written back into them. Buckets are filled in
 * reverse registration order. Collective over comm (the same layout on every
 * rank). config may be NULL for the defaults. */
WEFT_API weftResult_t weftReducerCreate(weftComm_t comm, int nbuffers, void* const* buffers, const size_t* counts,
                                        weftDataType_t datatype, const weftReducerConfig* config,
                                        weftReducer_t* reducer);
/* Buffer `index` holds its final gradient for this step; the caller must not
 * touch it until Wait returns. A bucket whose buffers are all ready starts. */
WEFT_API weftResult_t weftReducerMarkReady(weftReducer_t reducer, int index);
/* GPU buffers: buffer `index` is final once the work queued on `stream` so
 * far has run (NULL: the legacy default stream, which is also what
 * weftReducerMarkReady uses for GPU buffers). The call does not wait for it;
 * a stream given for host buffers is weftInvalidUsage. */
WEFT_API weftResult_t weftReducerMarkReadyOnStream(weftReducer_t reducer, int index, weftStream_t stream);
/* Waits until every bucket of this step is reduced and written back. Every
 * buffer must have been marked; otherwise weftInvalidUsage and no buffer is
 * written. Starts the next step. */
WEFT_API weftResult_t weftReducerWait(weftReducer_t reducer);
WEFT_API weftResult_t weftReducerGetStats(weftReducer_t reducer, weftReducerStats* stats);
/* The bucket of each buffer (buckets[i] for buffer i) and the bucket count. */
WEFT_API weftResult_t weftReducerBuckets(weftReducer_t reducer, int* buckets, int* nbuckets);
WEFT_API weftResult_t weftReducerDestroy(weftReducer_t reducer);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
