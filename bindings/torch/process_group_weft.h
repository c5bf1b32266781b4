// c10d::ProcessGroup over one weft communicator, for CPU tensors.
//
// Every operation is validated on the caller's thread (bad arguments raise
// at once), then queued on the group's OpQueue and run there with weft's
// blocking calls; the caller gets a WorkWeft to wait on. weft bounds every
// wait by the group's timeout, so a dead or silent peer ends each queued
// operation with an error instead of a hang.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "bindings/torch/op_queue.h"
#include "bindings/torch/p2p_engine.h"
#include "bindings/torch/work_weft.h"
#include "weft/weft.h"

namespace weft::torch_backend {

class ProcessGroupWeft : public c10d::ProcessGroup {
 public:
  // Collective over the group: rank 0 creates the weft unique id and
  // publishes it in `store`; every rank then joins the communicator, with
  // `timeout` as weft's bound on every wait.
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupWeft() override;

  const std::string getBackendName() const override { return "weft"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // Each rank's input list, flattened as bytes (types may differ), gathered
  // in one weftAllGather.
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;

  // Through the store, not the communicator, so it names ranks that never
  // arrive even while others are stuck in a collective: rank 0 waits for
  // each rank's arrival key (within `opts.timeout` in all) and fails naming
  // the late ones (the first, or all with waitAllRanks), with weft's
  // diagnosis of the group's communicator appended; the others wait for
  // rank 0's release.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  // Rank 0 draws the first number and puts it in the store (gloo's scheme);
  // every operation of the queue moves it on.
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;

 private:
  // Queues `body` (run on the queue thread; it throws on failure) and
  // returns the Work that reports its outcome with `outputs` as result.
  // `inputs` (default: `outputs`) are the shapes torch's profiler records.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         std::function<void()> body, const std::vector<at::Tensor>& inputs = {});
  // Sparse (COO) all-reduce, SUM only: every rank's indices and values are
  // gathered (padded to the largest), then summed and coalesced locally.
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(const at::Tensor& tensor, const c10d::AllreduceOptions& opts);
  // Body of sparseAllreduce, on the queue thread.
  at::Tensor gatherSparse(const at::Tensor& input);
  std::string diagnosis();
  // Throws with weft's own message when `r` is not weftSuccess.
  void stopThreads();  // the point-to-point engine and the queue, each after its work ends
  void check(weftResult_t r, const char* what) const;
  // Sends and receives of unequal blocks (alltoall with splits, alltoall of
  // tensor lists) as one weft group; the block to and from self is a copy.
  void exchange(const std::vector<at::Tensor>& sendBlocks, const std::vector<at::Tensor>& recvBlocks);

  weftComm_t comm_ = nullptr;
  c10::intrusive_ptr<c10d::Store> store_;
  int timeoutMs_ = 0;
  uint64_t monitoredBarriers_ = 0;  // calls so far: keys of each call are its own
  std::unique_ptr<OpQueue> queue_;
  std::unique_ptr<P2pEngine> p2p_;
};

}  // namespace weft::torch_backend
