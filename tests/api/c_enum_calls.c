/* See c_enum_calls.h. */
#include "tests/api/c_enum_calls.h"

weftResult_t cAllReduce(const void* s, void* r, size_t n, int type, int op, weftComm_t comm) {
  return weftAllReduce(s, r, n, (weftDataType_t)type, (weftRedOp_t)op, comm, NULL);
}

weftResult_t cReduceScatter(const void* s, void* r, size_t n, int type, int op, weftComm_t comm) {
  return weftReduceScatter(s, r, n, (weftDataType_t)type, (weftRedOp_t)op, comm, NULL);
}

weftResult_t cReduce(const void* s, void* r, size_t n, int type, int op, int root, weftComm_t comm) {
  return weftReduce(s, r, n, (weftDataType_t)type, (weftRedOp_t)op, root, comm, NULL);
}

weftResult_t cAllGather(const void* s, void* r, size_t n, int type, weftComm_t comm) {
  return weftAllGather(s, r, n, (weftDataType_t)type, comm, NULL);
}

weftResult_t cBroadcast(const void* s, void* r, size_t n, int type, int root, weftComm_t comm) {
  return weftBroadcast(s, r, n, (weftDataType_t)type, root, comm, NULL);
}

weftResult_t cBcast(void* b, size_t n, int type, int root, weftComm_t comm) {
  return weftBcast(b, n, (weftDataType_t)type, root, comm, NULL);
}

weftResult_t cAlltoAll(const void* s, void* r, size_t n, int type, weftComm_t comm) {
  return weftAlltoAll(s, r, n, (weftDataType_t)type, comm, NULL);
}

weftResult_t cSend(const void* s, size_t n, int type, int peer, weftComm_t comm) {
  return weftSend(s, n, (weftDataType_t)type, peer, comm, NULL);
}

weftResult_t cRecv(void* r, size_t n, int type, int peer, weftComm_t comm) {
  return weftRecv(r, n, (weftDataType_t)type, peer, comm, NULL);
}

weftResult_t cRedOpCreatePreMulSum(int* op, void* scalar, int type, int residence, weftComm_t comm) {
  weftRedOp_t made = weftSum;
  weftResult_t r =
      weftRedOpCreatePreMulSum(&made, scalar, (weftDataType_t)type, (weftScalarResidence_t)residence, comm);
  if (r == weftSuccess) *op = (int)made;
  return r;
}

weftResult_t cRedOpDestroy(int op, weftComm_t comm) { return weftRedOpDestroy((weftRedOp_t)op, comm); }

const char* cGetErrorString(int result) { return weftGetErrorString((weftResult_t)result); }

weftResult_t cCompressorCreate(weftComm_t comm, size_t n, int type) {
  weftCompressConfig config = WEFT_COMPRESS_CONFIG_INITIALIZER;
  weftCompressor_t made = NULL;
  weftResult_t r;
  config.kind = weftCompressBf16;
  r = weftCompressorCreate(comm, n, (weftDataType_t)type, &config, &made);
  if (made) weftCompressorDestroy(made);
  return r;
}

weftResult_t cReducerCreate(weftComm_t comm, void* buffer, size_t n, int type) {
  weftReducer_t made = NULL;
  weftResult_t r = weftReducerCreate(comm, 1, &buffer, &n, (weftDataType_t)type, NULL, &made);
  if (made) weftReducerDestroy(made);
  return r;
}
