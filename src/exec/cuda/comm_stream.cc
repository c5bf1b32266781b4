#include "src/exec/cuda/comm_stream.h"

#include "src/exec/cuda/runtime.h"

namespace weft::cuda {

RelaxedCaptureMode::RelaxedCaptureMode() : previous_(cudaStreamCaptureModeRelaxed) {
  (void)cudaThreadExchangeStreamCaptureMode(&previous_);
}

RelaxedCaptureMode::~RelaxedCaptureMode() { (void)cudaThreadExchangeStreamCaptureMode(&previous_); }

CaptureState captureStateOf(cudaStream_t stream, cudaGraph_t* graph) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaGraph_t g = nullptr;
  WEFT_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, &id, &g));
  if (graph) *graph = g;
  switch (status) {
    case cudaStreamCaptureStatusActive: return CaptureState::Active;
    case cudaStreamCaptureStatusInvalidated: return CaptureState::Invalidated;
    default: return CaptureState::None;
  }
}

CommStream::CommStream() {
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&userReady_, cudaEventDisableTiming));
  WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&serial_, cudaEventDisableTiming));
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&setup_, cudaStreamNonBlocking));
  WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&setupDone_, cudaEventDisableTiming));
}

void CommStream::afterSetup() {
  WEFT_CUDA_CHECK(cudaEventRecord(setupDone_, setup_));
  WEFT_CUDA_CHECK(cudaStreamWaitEvent(stream_, setupDone_, 0));
}

CommStream::~CommStream() {
  RelaxedCaptureMode relaxed;
  for (cudaStream_t s : {setup_, stream_})
    if (s) (void)cudaStreamSynchronize(s);
  for (cudaEvent_t e : {userReady_, done_, serial_, setupDone_})
    if (e) (void)cudaEventDestroy(e);
  for (cudaStream_t s : {setup_, stream_})
    if (s) (void)cudaStreamDestroy(s);
  (void)cudaGetLastError();
}

cudaStream_t CommStream::begin(cudaStream_t user, bool captured) {
  if (captured) {
    // Behind every eager launch queued so far and every earlier replay.
    captured_ = true;
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(user, serial_, cudaEventWaitExternal));
    return user;
  }
  WEFT_CUDA_CHECK(cudaEventRecord(userReady_, user));
  WEFT_CUDA_CHECK(cudaStreamWaitEvent(stream_, userReady_, 0));
  if (captured_) WEFT_CUDA_CHECK(cudaStreamWaitEvent(stream_, serial_, 0));
  return stream_;
}

void CommStream::end(cudaStream_t user, bool captured) {
  if (captured) {
    WEFT_CUDA_CHECK(cudaEventRecordWithFlags(serial_, user, cudaEventRecordExternal));
    return;
  }
  WEFT_CUDA_CHECK(cudaEventRecord(done_, stream_));
  // Always: the first captured launch must come after the eager ones before it.
  WEFT_CUDA_CHECK(cudaEventRecord(serial_, stream_));
  WEFT_CUDA_CHECK(cudaStreamWaitEvent(user, done_, 0));
  anyWork_ = true;
}

bool CommStream::idle(cudaError_t* err) const {
  if (err) *err = cudaSuccess;
  if (!anyWork_) return true;
  RelaxedCaptureMode relaxed;
  cudaError_t e = cudaEventQuery(done_);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  if (e != cudaSuccess && err) *err = e;
  return true;
}

void CommStream::synchronize() const {
  RelaxedCaptureMode relaxed;
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace weft::cuda
