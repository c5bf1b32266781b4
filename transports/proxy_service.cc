#include "transports/proxy_service.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "src/util/log.h"

namespace weft {

ProxyService::ProxyService(std::string name, int64_t sleepSliceNs) : name_(std::move(name)) {
  // A thread beside the ranks: a core per rank leaves none for it, so it
  // never spins alone.
  knobs_ = waitKnobs();
  knobs_.sleepSliceNs = sleepSliceNs;
  thread_ = std::thread([this] { run(); });
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

ProxyService::~ProxyService() {
  stop_.store(true, std::memory_order_release);
  ring(&bell_);
  if (thread_.joinable()) thread_.join();
  if (!tasks_.empty()) WEFT_WARN("%s: stopped with %zu connection(s) still attached", name_.c_str(), tasks_.size());
}

void ProxyService::add(ProxyTask* task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(task);
  }
  ring(&bell_);
}

void ProxyService::remove(ProxyTask* task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.erase(std::remove(tasks_.begin(), tasks_.end(), task), tasks_.end());
}

size_t ProxyService::taskCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

bool ProxyService::pass() {
  std::lock_guard<std::mutex> lock(mu_);
  bool progressed = false;
  for (size_t i = 0; i < tasks_.size();) {
    ProxyTask* t = tasks_[i];
    try {
      if (t->progress()) progressed = true;
      ++i;
    } catch (const std::exception& e) {
      tasks_.erase(tasks_.begin() + static_cast<std::ptrdiff_t>(i));
      t->failed(e);
    }
  }
  return progressed;
}

void ProxyService::run() {
  Backoff backoff(knobs_);
  while (!stop_.load(std::memory_order_acquire)) {
    const uint32_t seen = bell_.seq.load(std::memory_order_acquire);
    if (pass()) {
      backoff.reset();
      continue;
    }
    backoff.pause(backoff.idle(), &bell_, seen);
  }
}

}  // namespace weft
