#include "algorithms/coll_args.h"

#include "src/util/error.h"

namespace weft::algo {

void validateArgs(const CollArgs& a) {
  if (a.nranks < 1) raise(weftInvalidArgument, "plan: nranks %d < 1", a.nranks);
  if (a.rank < 0 || a.rank >= a.nranks) raise(weftInvalidArgument, "plan: rank %d not in [0,%d)", a.rank, a.nranks);
  if (a.root < 0 || a.root >= a.nranks) raise(weftInvalidArgument, "plan: root %d not in [0,%d)", a.root, a.nranks);
  if (a.elemSize == 0) raise(weftInvalidArgument, "plan: element size 0");
  // conn is a uint8_t; tree algorithms use two connection indices per channel.
  if (a.nChannels > 64) raise(weftInvalidArgument, "plan: %d channels, at most 64", a.nChannels);
  if (a.geometry.slotBytes == 0 || a.geometry.nSlots == 0)
    raise(weftInvalidArgument, "plan: empty FIFO geometry");
  auto checkOrder = [&](const std::vector<int>& order) {
    if (order.empty()) return;
    if (int(order.size()) != a.nranks)
      raise(weftInvalidArgument, "plan: ring order has %zu ranks, communicator %d", order.size(), a.nranks);
    std::vector<bool> seen(a.nranks, false);
    for (int r : order) {
      if (r < 0 || r >= a.nranks || seen[r]) raise(weftInvalidArgument, "plan: ring order is not a permutation");
      seen[r] = true;
    }
  };
  checkOrder(a.order);
  for (const auto& o : a.channelOrders) {
    if (o.empty()) raise(weftInvalidArgument, "plan: an empty per-channel ring order");
    checkOrder(o);
  }
}

std::vector<int> ringOrder(const CollArgs& a) {
  if (!a.order.empty()) return a.order;
  std::vector<int> o(a.nranks);
  for (int i = 0; i < a.nranks; i++) o[i] = i;
  return o;
}

std::vector<int> ringOrder(const CollArgs& a, int channel) {
  if (!a.channelOrders.empty()) return a.channelOrders[size_t(channel) % a.channelOrders.size()];
  return ringOrder(a);
}

plan::Plan emptyPlan(const CollArgs& a) {
  plan::Plan p;
  p.coll = a.coll;
  p.nranks = a.nranks;
  p.rank = a.rank;
  p.elemSize = a.elemSize;
  p.sliceBytes = a.geometry.slotBytes;
  return p;
}

}  // namespace weft::algo
