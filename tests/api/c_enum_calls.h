/* Calls of the C API with any int where weft.h says an enum, as a C caller
 * may make them (c_enum_calls.c is C: there the cast is defined; in C++ an
 * int outside the enum's range cannot become the enum). */
#pragma once

#include <stddef.h>

#include "weft/weft.h"

#ifdef __cplusplus
extern "C" {
#endif

weftResult_t cAllReduce(const void* s, void* r, size_t n, int type, int op, weftComm_t comm);
weftResult_t cReduceScatter(const void* s, void* r, size_t n, int type, int op, weftComm_t comm);
weftResult_t cReduce(const void* s, void* r, size_t n, int type, int op, int root, weftComm_t comm);
weftResult_t cAllGather(const void* s, void* r, size_t n, int type, weftComm_t comm);
weftResult_t cBroadcast(const void* s, void* r, size_t n, int type, int root, weftComm_t comm);
weftResult_t cBcast(void* b, size_t n, int type, int root, weftComm_t comm);
weftResult_t cAlltoAll(const void* s, void* r, size_t n, int type, weftComm_t comm);
weftResult_t cSend(const void* s, size_t n, int type, int peer, weftComm_t comm);
weftResult_t cRecv(void* r, size_t n, int type, int peer, weftComm_t comm);
/* *op is written only on success. */
weftResult_t cRedOpCreatePreMulSum(int* op, void* scalar, int type, int residence, weftComm_t comm);
weftResult_t cRedOpDestroy(int op, weftComm_t comm);
const char* cGetErrorString(int result);
/* A bf16 compressor of n elements / a reducer over one buffer, both with
 * the given datatype; whatever they create is destroyed again. */
weftResult_t cCompressorCreate(weftComm_t comm, size_t n, int type);
weftResult_t cReducerCreate(weftComm_t comm, void* buffer, size_t n, int type);

#ifdef __cplusplus
}
#endif
