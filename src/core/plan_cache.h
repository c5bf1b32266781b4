// Plans cached per call shape, so repeated calls (the training loop) build
// nothing.
#pragma once

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft {

class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 128) : capacity_(capacity) {}

  std::shared_ptr<const plan::Plan> get(const algo::CollArgs& a, int algo, const std::function<plan::Plan()>& build);

 private:
  using Key = std::tuple<int, int, uint64_t, uint32_t, int, int, uint64_t, uint32_t>;
  std::mutex mutex_;
  size_t capacity_;
  std::list<Key> lru_;
  std::map<Key, std::pair<std::shared_ptr<const plan::Plan>, std::list<Key>::iterator>> map_;
};

}  // namespace weft
