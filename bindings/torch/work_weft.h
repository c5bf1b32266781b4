// The Work handed back for every operation: completed by the group's
// OpQueue thread, with a Future that DDP's reducer chains its callbacks on.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <vector>

namespace weft::torch_backend {

class WorkWeft : public c10d::Work {
 public:
  // `profilingTitle` (e.g. "weft:all_reduce", static) names the operation
  // in torch's profiler; null records nothing.
  WorkWeft(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, const char* profilingTitle = nullptr,
           const c10::optional<std::vector<at::Tensor>>& inputs = c10::nullopt);

  // Called once, on the queue thread: success (eptr null) or the error.
  void complete(std::exception_ptr eptr);

  // Waits at most `timeout` (kNoTimeout: until done; weft bounds every
  // operation by the group's timeout) and rethrows the operation's error.
  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // The sender of a completed receive (recv from any source reports it).
  int sourceRank() const override;
  void setSourceRank(int rank) { sourceRank_ = rank; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<int> sourceRank_{-1};
};

}  // namespace weft::torch_backend
