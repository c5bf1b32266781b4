#include "bindings/torch/op_queue.h"

namespace weft::torch_backend {

OpQueue::OpQueue() : thread_([this] { run(); }) {}

OpQueue::~OpQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void OpQueue::push(std::function<void()> op) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ops_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void OpQueue::run() {
  for (;;) {
    std::function<void()> op;
    {
      // Idle waiting is unbounded on purpose: there is nothing to time out,
      // and the destructor ends it.
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !ops_.empty(); });
      if (ops_.empty()) return;
      op = std::move(ops_.front());
      ops_.pop_front();
    }
    op();
  }
}

}  // namespace weft::torch_backend
