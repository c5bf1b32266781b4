// Plans cached per call shape, so repeated calls (the training loop) build
// nothing.
#pragma once

#include <compare>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"
#include "algorithms/selector.h"

namespace weft {

// Everything a plan depends on that changes from call to call. A
// communicator's ring orders and hosts never change, so they are not part
// of it.
struct PlanKey {
  plan::Coll coll = plan::Coll::AllReduce;
  algo::AlgoId algo = algo::kRing;
  algo::ProtoId proto = algo::kSimple;
  uint64_t count = 0;
  uint32_t elemSize = 0;
  uint32_t alignBytes = 0;
  int root = 0;
  int channels = 0;
  uint64_t sliceBytes = 0;
  uint32_t nSlots = 0;
  plan::Wire wire = plan::Wire::Native;
  bool direct = false;  // a single-copy plan (algorithms/direct.h)

  auto operator<=>(const PlanKey&) const = default;
};

PlanKey planKey(const algo::CollArgs& a, algo::AlgoId algo, algo::ProtoId proto);

class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 128) : capacity_(capacity) {}

  std::shared_ptr<const plan::Plan> get(const PlanKey& k, const std::function<plan::Plan()>& build);

 private:
  std::mutex mutex_;
  size_t capacity_;
  std::list<PlanKey> lru_;
  std::map<PlanKey, std::pair<std::shared_ptr<const plan::Plan>, std::list<PlanKey>::iterator>> map_;
};

}  // namespace weft
