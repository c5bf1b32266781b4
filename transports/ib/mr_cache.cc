#include "transports/ib/mr_cache.h"

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::ib {

MrCache::~MrCache() {
  for (auto& r : regions_) {
    try {
      dereg_(r.keys);
    } catch (const std::exception& e) {
      WEFT_WARN("NET/IB: deregistering %zu bytes at %p failed: %s", r.bytes, reinterpret_cast<void*>(r.base),
                e.what());
    }
  }
}

MrKeys MrCache::acquire(const void* p, size_t bytes) {
  if (!p || bytes == 0) raise(weftInternalError, "MrCache::acquire(%p, %zu): empty range", p, bytes);
  uintptr_t start = reinterpret_cast<uintptr_t>(p);
  uintptr_t end = start + bytes;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : regions_) {
    if (r.base <= start && end <= r.base + r.bytes) {
      ++r.refs;
      return r.keys;
    }
  }
  uintptr_t base = start / page_ * page_;
  size_t len = (end - base + page_ - 1) / page_ * page_;
  MrKeys keys = reg_(base, len);
  ++registrations_;
  regions_.push_back(Region{base, len, keys, 1});
  return keys;
}

void MrCache::release(const MrKeys& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < regions_.size(); ++i) {
    if (regions_[i].keys.handle != keys.handle) continue;
    if (--regions_[i].refs == 0) {
      MrKeys k = regions_[i].keys;
      regions_.erase(regions_.begin() + static_cast<long>(i));
      dereg_(k);
    }
    return;
  }
  raise(weftInternalError, "MrCache::release of a registration it does not hold (%p)", keys.handle);
}

size_t MrCache::regions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return regions_.size();
}

}  // namespace weft::ib
