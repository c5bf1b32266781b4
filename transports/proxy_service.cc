#include "transports/proxy_service.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {

ProxyService::ProxyService(std::string name, int64_t sleepSliceNs, bool spin, int logRank, bool yield)
    : name_(std::move(name)) {
  // A thread beside the ranks: a core per rank leaves none for it, so it
  // never spins alone.
  knobs_ = waitKnobs();
  knobs_.sleepSliceNs = sleepSliceNs;
  if (!spin) knobs_.spins = 0;
  if (!yield) knobs_.yieldNs = 0;
  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) raiseErrno("eventfd (proxy service)");
  try {
    thread_ = std::thread([this, logRank] { run(logRank); });
  } catch (...) {
    ::close(wakeFd_);
    throw;
  }
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

ProxyService::~ProxyService() {
  stop_.store(true, std::memory_order_release);
  ring(&bell_);
  if (thread_.joinable()) thread_.join();
  ::close(wakeFd_);
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

bool ProxyService::everyTaskStandsBack() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ProxyTask* t : tasks_)
    if (!t->standsBack()) return false;
  return true;
}

void ProxyService::nap(uint32_t seen) {
  int64_t limit = knobs_.sleepSliceNs;
  fds_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (ProxyTask* t : tasks_) {
      const int64_t w = t->idleWait(&fds_);
      if (w >= 0) limit = std::min(limit, w);
    }
  }
  if (fds_.empty()) {
    sleepOn(&bell_, seen, limit);
    return;
  }
  fds_.push_back(pollfd{wakeFd_, POLLIN, 0});
  // Counted among the sleepers before the last look at seq: a ring after
  // it writes the eventfd, one before it is seen here. The eventfd is named
  // on the bell only for such a nap, so rings at other times cost no write.
  bell_.wakeFdPlus1.store(wakeFd_ + 1, std::memory_order_seq_cst);
  bell_.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (bell_.seq.load(std::memory_order_seq_cst) == seen && limit > 0) {
    const timespec ts{static_cast<time_t>(limit / 1000000000), static_cast<long>(limit % 1000000000)};
    if (::ppoll(fds_.data(), fds_.size(), &ts, nullptr) < 0 && errno != EINTR)
      WEFT_WARN("%s: poll: %s", name_.c_str(), strerror(errno));
  }
  bell_.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  bell_.wakeFdPlus1.store(0, std::memory_order_seq_cst);
  uint64_t drained;
  while (::read(wakeFd_, &drained, sizeof drained) > 0) {
  }
}

void ProxyService::run(int logRank) {
  if (logRank >= 0) setLogRank(logRank);
  Backoff backoff(knobs_);
  while (!stop_.load(std::memory_order_acquire)) {
    const uint32_t seen = bell_.seq.load(std::memory_order_acquire);
    if (pass()) {
      backoff.reset();
      continue;
    }
    const WaitPhase phase = backoff.idle();
    if (phase == WaitPhase::Sleep || (phase == WaitPhase::Yield && everyTaskStandsBack())) nap(seen);
    else backoff.pause(phase, &bell_, seen);
  }
}

}  // namespace weft
