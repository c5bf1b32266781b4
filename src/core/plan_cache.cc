#include "src/core/plan_cache.h"

namespace weft {

std::shared_ptr<const plan::Plan> PlanCache::get(const algo::CollArgs& a, int algo,
                                                 const std::function<plan::Plan()>& build) {
  Key k{static_cast<int>(a.coll), algo, a.count, a.elemSize, a.root, a.nChannels, a.geometry.slotBytes,
        a.geometry.nSlots};
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(k);
  if (it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }
  auto p = std::make_shared<const plan::Plan>(build());
  lru_.push_front(k);
  map_[k] = {p, lru_.begin()};
  if (map_.size() > capacity_) {
    map_.erase(lru_.back());
    lru_.pop_back();
  }
  return p;
}

}  // namespace weft
