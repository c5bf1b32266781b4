// What one communicator keeps for the device path: uploaded plans, the
// device views of its FIFOs, device scratch, the pinned status block the
// kernel reports through, and the events that say when its last work ended.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/plan.h"
#include "src/exec/cuda/device_plan.h"
#include "src/exec/cuda/host_fifos.h"
#include "src/exec/host/host_executor.h"
#include "src/kernels/reduce.h"

namespace weft::cuda {

using ErrorSink = std::function<void(weftResult_t, const std::string&)>;

class DeviceState {
 public:
  DeviceState(int device, const std::atomic<bool>* abortFlag, int rank);
  ~DeviceState();  // waits for this communicator's queued device work
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  int device() const { return device_; }

  // Queues `p` on `stream`. `keep` is the plan cache's handle when the plan
  // is cached (its upload is then reused by later calls), else null.
  // A failure inside the kernel reaches `onError` once the stream gets there.
  void run(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep, std::span<const BufferBinding> b,
           const kernels::RedOp& op, const FifoLookup& fifos, int64_t timeoutMs, cudaStream_t stream,
           ErrorSink onError);

  // A device buffer of at least `bytes`, kept for later calls (in-place
  // AllToAll stages its send buffer here).
  void* stage(size_t bytes, cudaStream_t stream);

 private:
  struct Uploaded {
    std::shared_ptr<const plan::Plan> keep;
    char* blob = nullptr;  // channels, steps, fifos
    const DevChannel* channels = nullptr;
    const DevStep* steps = nullptr;
    const DevFifo* fifos = nullptr;
    int nChannels = 0;
  };
  struct HostImage {
    std::vector<DevChannel> channels;
    std::vector<DevStep> steps;
    std::vector<DevFifo> fifos;
  };
  HostImage buildImage(const plan::Plan& p, const FifoLookup& fifos);
  Uploaded upload(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep, const FifoLookup& fifos,
                  cudaStream_t stream, bool* temporary);
  DevFifo fifoView(const FifoEnd& e);
  void afterLaunch(cudaStream_t stream, ErrorSink onError);

  int device_;
  int rank_;
  cudaStream_t setupStream_ = nullptr;  // for reads that must not queue behind other work
  DevStatus* statusHost_ = nullptr;
  DevStatus* statusDev_ = nullptr;
  HostMapping abortMapping_;
  const volatile uint8_t* abortDev_ = nullptr;
  std::map<const plan::Plan*, Uploaded> plans_;
  std::map<const FifoHeader*, DevFifo> fifoViews_;
  std::vector<HostMapping> mappings_;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  void* stage_ = nullptr;
  size_t stageBytes_ = 0;
  std::map<cudaStream_t, cudaEvent_t> lastWork_;
  bool reported_ = false;  // the first kernel failure is reported once
  BellRinger ringer_;  // declared last: stopped first, after the work it serves
};

}  // namespace weft::cuda
