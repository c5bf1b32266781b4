#include "bindings/torch/work_weft.h"

#include <ATen/core/ivalue_inl.h>
#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>

namespace weft::torch_backend {

WorkWeft::WorkWeft(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, const char* profilingTitle,
                   const c10::optional<std::vector<at::Tensor>>& inputs)
    : c10d::Work(rank, type, profilingTitle, inputs), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

void WorkWeft::complete(std::exception_ptr eptr) {
  // The future first: a waiter woken by finish() may read it at once.
  if (eptr)
    future_->setError(eptr);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(eptr);
}

int WorkWeft::sourceRank() const {
  int rank = sourceRank_.load();
  TORCH_CHECK(rank >= 0, "weft backend: sourceRank() is known only for a completed receive");
  return rank;
}

bool WorkWeft::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [this] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [this] { return completed_; })) {
    throw std::runtime_error("weft: operation did not complete within " + std::to_string(timeout.count()) + " ms");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

}  // namespace weft::torch_backend
