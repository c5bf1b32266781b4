#include "src/exec/cuda/host_fifos.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>

#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"

namespace weft::cuda {
namespace {

constexpr uintptr_t kPage = 4096;

struct Registration {
  size_t bytes;
  int refs;
};

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
// Registrations made by weft, by page-aligned base.
std::map<char*, Registration>& registry() {
  static std::map<char*, Registration> r;
  return r;
}

// The weft registration covering page, or end().
std::map<char*, Registration>::iterator covering(char* page) {
  auto& r = registry();
  auto it = r.upper_bound(page);
  if (it == r.begin()) return r.end();
  --it;
  return page < it->first + it->second.bytes ? it : r.end();
}

bool registeredElsewhere(char* page) {
  cudaPointerAttributes a{};
  const bool host = cudaPointerGetAttributes(&a, page) == cudaSuccess && a.type == cudaMemoryTypeHost;
  (void)cudaGetLastError();
  return host;
}

}  // namespace

HostMapping::HostMapping(const void* p, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + std::max<size_t>(bytes, 1) + kPage - 1) & ~(kPage - 1);
  base_ = reinterpret_cast<char*>(start);
  bytes_ = end - start;
  std::lock_guard<std::mutex> lock(registryMutex());
  try {
    char* page = base_;
    char* const stop = base_ + bytes_;
    while (page < stop) {
      auto it = covering(page);
      if (it != registry().end()) {
        if (std::find(refs_.begin(), refs_.end(), it->first) == refs_.end()) {
          it->second.refs++;
          refs_.push_back(it->first);
        }
        page = it->first + it->second.bytes;
        continue;
      }
      if (registeredElsewhere(page)) {  // by the user: used as is, not owned
        page += kPage;
        continue;
      }
      // The longest run of pages nobody has registered yet.
      char* runEnd = page + kPage;
      while (runEnd < stop && covering(runEnd) == registry().end() && !registeredElsewhere(runEnd)) runEnd += kPage;
      WEFT_CUDA_CHECK(cudaHostRegister(page, runEnd - page, cudaHostRegisterPortable | cudaHostRegisterMapped));
      registry()[page] = {size_t(runEnd - page), 1};
      refs_.push_back(page);
      page = runEnd;
    }
  } catch (...) {
    // Drop what was taken so far; the registry lock is still held here.
    for (char* b : refs_) {
      auto it = registry().find(b);
      if (it != registry().end() && --it->second.refs == 0) {
        (void)cudaHostUnregister(b);
        registry().erase(it);
      }
    }
    refs_.clear();
    throw;
  }
}

HostMapping& HostMapping::operator=(HostMapping&& o) noexcept {
  if (this != &o) {
    release();
    base_ = o.base_;
    bytes_ = o.bytes_;
    refs_ = std::move(o.refs_);
    o.refs_.clear();
    o.base_ = nullptr;
  }
  return *this;
}

HostMapping::~HostMapping() { release(); }

void HostMapping::release() {
  if (refs_.empty()) return;
  std::lock_guard<std::mutex> lock(registryMutex());
  for (char* b : refs_) {
    auto it = registry().find(b);
    if (it != registry().end() && --it->second.refs == 0) {
      (void)cudaHostUnregister(b);
      registry().erase(it);
    }
  }
  (void)cudaGetLastError();
  refs_.clear();
}

void* HostMapping::device(const void* p) const {
  const char* c = static_cast<const char*>(p);
  if (c < base_ || c >= base_ + bytes_)
    raise(weftInternalError, "host mapping: %p is outside the mapped range %p+%zu", p, static_cast<void*>(base_),
          bytes_);
  void* dev = nullptr;
  WEFT_CUDA_CHECK(cudaHostGetDevicePointer(&dev, const_cast<void*>(p), 0));
  return dev;
}

BellRinger::~BellRinger() { stop(); }

void BellRinger::stop() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BellRinger::add(Doorbell* bell) {
  if (!bell) return;
  std::lock_guard<std::mutex> l(mutex_);
  if (std::find(bells_.begin(), bells_.end(), bell) == bells_.end()) bells_.push_back(bell);
}

void BellRinger::setBusyCheck(std::function<bool()> busy) {
  std::lock_guard<std::mutex> l(mutex_);
  busy_ = std::move(busy);
}

void BellRinger::workStarted() {
  std::lock_guard<std::mutex> l(mutex_);
  if (bells_.empty()) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  active_ = true;
  launches_++;
  cv_.notify_all();
}

void BellRinger::keepRinging() {
  {
    std::lock_guard<std::mutex> l(mutex_);
    always_ = true;
  }
  workStarted();
}

void BellRinger::loop() {
  std::unique_lock<std::mutex> l(mutex_);
  for (unsigned round = 1;; round++) {
    cv_.wait(l, [&] { return stop_ || active_ || always_; });
    if (stop_) return;
    std::vector<Doorbell*> bells = bells_;
    // About every millisecond: stop once the eager work is done. The check
    // is a CUDA event query, made without the lock.
    std::function<bool()> busy = (round % 50 == 0 && !always_) ? busy_ : nullptr;
    const uint64_t seen = launches_;  // a launch queued during the query keeps the ringing on
    l.unlock();
    for (Doorbell* b : bells) ring(b);
    const bool idle = busy && !busy();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    l.lock();
    if (idle && launches_ == seen) active_ = false;
  }
}

}  // namespace weft::cuda
