#include "src/core/plan_cache.h"

namespace weft {

PlanKey planKey(const algo::CollArgs& a, algo::AlgoId algo, algo::ProtoId proto) {
  PlanKey k;
  k.coll = a.coll;
  k.algo = algo;
  k.proto = proto;
  k.count = a.count;
  k.elemSize = a.elemSize;
  k.alignBytes = a.alignBytes;
  k.root = a.root;
  k.channels = a.nChannels;
  k.sliceBytes = a.geometry.slotBytes;
  k.nSlots = a.geometry.nSlots;
  return k;
}

std::shared_ptr<const plan::Plan> PlanCache::get(const PlanKey& k, const std::function<plan::Plan()>& build) {
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
