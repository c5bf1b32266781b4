// What a plan builder needs to know about one collective call on one rank.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/plan.h"

namespace weft::algo {

struct CollArgs {
  plan::Coll coll = plan::Coll::AllReduce;
  int nranks = 1;
  int rank = 0;
  // NCCL's meaning: AllReduce/Broadcast/Reduce: elements of the buffer;
  // ReduceScatter: elements each rank receives; AllGather: elements each
  // rank sends; AllToAll: elements exchanged with each peer.
  uint64_t count = 0;
  uint32_t elemSize = 4;
  // Split points (channels' parts, ring blocks) fall on multiples of this
  // many bytes from the buffer's start when it is a multiple of elemSize;
  // 0: anywhere (element granularity). The caller sets it per buffer kind
  // (device buffers: the kernel's 16-byte vectors).
  uint32_t alignBytes = 0;
  int root = 0;
  int nChannels = 1;
  plan::FifoGeometry geometry;
  // Ring order of the ranks (a permutation of 0..nranks-1); empty = 0..n-1.
  std::vector<int> order;
  // Per-channel ring orders (channel c uses channelOrders[c % size]), so
  // channels can take different paths (NICs); empty = `order` for all.
  std::vector<std::vector<int>> channelOrders;
  // The host of each rank (any ids; equal ids share a host), for algorithms
  // that shape themselves to hosts; empty = one rank per host.
  std::vector<int> hostOf;
};

}  // namespace weft::algo

namespace weft::algo {

// Throws weft::Error (weftInvalidArgument) when the arguments cannot describe
// a call: rank or root out of range, zero element size, too many channels for
// a connection index, a ring order that is not a permutation.
void validateArgs(const CollArgs& a);

// The ring order to use: a.order, or 0..n-1 when it is empty.
std::vector<int> ringOrder(const CollArgs& a);
// The ring order of channel c: channelOrders[c % size] when given, else ringOrder(a).
std::vector<int> ringOrder(const CollArgs& a, int channel);

// An empty plan with the call's identity filled in.
plan::Plan emptyPlan(const CollArgs& a);

}  // namespace weft::algo
