// A communicator's own device stream and the events that order its launches
// with the callers' streams.
//
// Eager call: an event recorded on the caller's stream, the device stream
// waits on it, the kernel runs on the device stream, and the caller's stream
// waits on an event recorded after it. So every launch of one communicator
// runs in call order whatever streams the calls came on (two launches never
// share its FIFOs at once), and each caller's stream still sees its result
// in order.
// Captured call (the caller's stream is being captured into a CUDA graph):
// the kernel is captured on the caller's stream, between an external wait on
// and an external record of `serial_`; once anything was captured, eager
// launches wait on and record `serial_` as well, so graph replays and eager
// calls of the communicator never overlap either.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>

#include "src/exec/cuda/launch_policy.h"

namespace weft::cuda {

// Lets this thread make calls CUDA forbids while a capture in global mode is
// under way (event queries, stream-ordered frees on streams that are not
// being captured); restores the thread's mode at the end.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode();
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode previous_;
};

// The capture state of `stream`, and its graph when one is being captured.
CaptureState captureStateOf(cudaStream_t stream, cudaGraph_t* graph);

class CommStream {
 public:
  CommStream();   // on the current device
  ~CommStream();  // waits for queued work (called after the communicator drained or aborted)
  CommStream(const CommStream&) = delete;
  CommStream& operator=(const CommStream&) = delete;

  cudaStream_t stream() const { return stream_; }
  // Uploads and allocations go on a stream of their own (a copy from
  // pageable memory waits for its stream to drain, which must not be the
  // stream of the communicator's running kernels); afterSetup() orders the
  // device stream behind them.
  cudaStream_t setup() const { return setup_; }
  void afterSetup();

  // Returns the stream to queue the launch on: the device stream (eager) or
  // `user` itself (captured). Between begin and end, only launches and
  // stream-ordered copies may be queued on it.
  cudaStream_t begin(cudaStream_t user, bool captured);
  void end(cudaStream_t user, bool captured);

  // True when all eager work queued so far has completed. A failed launch
  // (a kernel fault) is returned through *err.
  bool idle(cudaError_t* err = nullptr) const;
  // Waits for the eager work queued so far.
  void synchronize() const;
  bool everCaptured() const { return captured_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaStream_t setup_ = nullptr;
  cudaEvent_t setupDone_ = nullptr;
  cudaEvent_t userReady_ = nullptr;  // recorded on the caller's stream
  cudaEvent_t done_ = nullptr;       // recorded on the device stream after each launch
  cudaEvent_t serial_ = nullptr;     // orders eager launches with captured ones
  bool captured_ = false;
  std::atomic<bool> anyWork_{false};
};

}  // namespace weft::cuda
