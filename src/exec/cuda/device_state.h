// What one communicator keeps for the device path: its device stream
// (comm_stream.h), uploaded plans, the device views of its FIFOs, device
// scratch, and the pinned status word the kernel reports failures through.
//
// Nothing is allocated, uploaded or registered by a call whose stream is
// being captured into a CUDA graph: such a call finds everything made by an
// earlier call of the same shape outside capture, or is refused
// (launch_policy.h). Device memory (plan images, scratch, staging) is shared
// by its owners (the plan cache's entry, the current scratch, every graph
// that captured a launch using it) and freed, stream-ordered on the device
// stream, when the last one lets go.
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
#include "src/exec/cuda/call_memory.h"
#include "src/exec/cuda/comm_stream.h"
#include "src/exec/cuda/device_plan.h"
#include "src/exec/cuda/host_fifos.h"
#include "src/exec/cuda/image_arena.h"
#include "src/exec/cuda/launch_policy.h"
#include "src/exec/host/host_executor.h"
#include "src/kernels/reduce.h"

namespace weft::cuda {

using ErrorSink = std::function<void(weftResult_t, const std::string&)>;

class DeviceState {
 public:
  // `ranksOnGpu`: ranks of this process that use the same GPU (the legacy
  // default stream cannot serve more than one). `imageArenaBytes`
  // (WEFT_DEVICE_IMAGE_ARENA): device memory reserved now for plan images;
  // `scratchBytes` (WEFT_DEVICE_SCRATCH): reserved now for each of scratch
  // and in-place staging (call_memory.h).
  DeviceState(int device, const std::atomic<bool>* abortFlag, int rank, int ranksOnGpu, size_t imageArenaBytes,
              size_t scratchBytes);
  ~DeviceState();  // waits for this communicator's queued eager work
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  int device() const { return device_; }

  // Queues `p` for `stream` (see comm_stream.h for the ordering). `keep` is
  // the plan cache's handle when the plan is cached (its upload is reused
  // while the cache holds the plan), else null (the image is cached by
  // content, for groups repeated every step).
  void run(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep, std::span<const BufferBinding> b,
           const kernels::RedOp& op, const FifoLookup& fifos, int64_t timeoutMs, cudaStream_t stream);

  // A device buffer of `bytes` that the next run() fills from `src` (on its
  // launch stream, before the kernel): in-place AllToAll sends from it.
  void* stage(const void* src, size_t bytes, cudaStream_t stream);

  // Maps the FIFOs `p` uses (set-up at init for the ring, so the first
  // calls need none).
  void prepare(const plan::Plan& p, const FifoLookup& fifos);

  // Reports a failure the kernel left in the status word, or a failed
  // launch, once; then returns true. Callable from any thread.
  bool poll(const ErrorSink& sink);

 private:
  struct Uploaded {
    std::weak_ptr<const plan::Plan> keep;
    BlockRef blob;  // channels, steps, fifos
    const DevChannel* channels = nullptr;
    const DevStep* steps = nullptr;
    const DevFifo* fifos = nullptr;
  };
  struct HostImage {
    std::vector<DevChannel> channels;
    std::vector<DevStep> steps;
    std::vector<DevFifo> fifos;
    std::vector<char> bytes;  // the three, laid out as uploaded
    size_t stepsAt = 0, fifosAt = 0;
  };
  HostImage buildImage(const plan::Plan& p, const FifoLookup& fifos, bool captured);
  // `captured`: the stream being captured into `graph`, or null (eager).
  const Uploaded& upload(const plan::Plan& p, const std::shared_ptr<const plan::Plan>& keep, const FifoLookup& fifos,
                         cudaStream_t captured, cudaGraph_t graph);
  const Uploaded& uploadInCapture(const plan::Plan& p, const FifoLookup& fifos, cudaStream_t captured,
                                  cudaGraph_t graph);
  Uploaded pointInto(char* base, const HostImage& img) const;
  Uploaded place(const HostImage& img);
  DevFifo fifoView(const FifoEnd& e, bool captured);
  char* slotsView(char* data, size_t bytes);
  BlockRef allocate(size_t bytes);
  bool placeInArena(const HostImage& img, Uploaded& u);
  BlockRef placeBindings(std::span<const BufferBinding> b, bool captured, cudaStream_t copyStream);
  bool inArena(const void* p) const;
  void growScratch(size_t bytes, bool captured);
  void reclaim();
  void refuseInCapture(const LaunchNeeds& needs);
  void keepForGraph(cudaGraph_t graph, std::vector<BlockRef> refs);
  void fillLaunch(DevLaunch& L, const Uploaded& u, const plan::Plan& p, std::span<const BufferBinding> b,
                  const kernels::RedOp& op, int64_t timeoutMs) const;
  void refuseUnrunnable(const plan::Plan& p, size_t nBindings, cudaStream_t stream);

  int device_;
  int rank_;
  int ranksOnGpu_;
  bool exactArith_ = false;  // WEFT_DEVICE_EXACT_ARITH: 16-bit floats round as on the host
  std::unique_ptr<CommStream> stream_;
  DevStatus* statusHost_ = nullptr;
  DevStatus* statusDev_ = nullptr;
  HostMapping abortMapping_;
  const volatile uint8_t* abortDev_ = nullptr;
  // Plan images: ranges of one block reserved with the state (image_arena.h),
  // filled from its pinned mirror. Ranges let go are reusable once the
  // eager launch after their release completed (launch sequence numbers).
  RangeArena arena_;
  char* arenaDev_ = nullptr;
  char* arenaHost_ = nullptr;
  uint64_t launchSeq_ = 0;     // eager launches queued
  uint64_t completedSeq_ = 0;  // eager launches known complete
  bool arenaFullLogged_ = false;
  std::shared_ptr<ReleaseQueue<void*>> releases_ = std::make_shared<ReleaseQueue<void*>>();
  std::map<const plan::Plan*, Uploaded> plans_;     // cached plans, while the cache holds them
  std::vector<std::pair<std::vector<char>, Uploaded>> byContent_;  // uncached plans, most recent last
  std::map<const FifoHeader*, DevFifo> fifoViews_;
  std::vector<HostMapping> mappings_;
  std::unique_ptr<CallMemory> calls_;  // scratch and staging, reserved with the state
  Uploaded capturedImage_;  // the image the last captured launch placed (owned by its graph)
  struct PendingStage {
    const void* src = nullptr;
    size_t bytes = 0;
  } pendingStage_;
  std::atomic<bool> reported_{false};  // the first failure is reported once
  BellRinger ringer_;  // declared last: stopped first, after the work it serves
};

}  // namespace weft::cuda
