// Splitting element ranges among channels and among the blocks of a loop.
// Every rank computes the same split from the same inputs, so the sender and
// the receiver of a block always agree on its size.
#pragma once

#include <algorithm>
#include <cstdint>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"

namespace weft::algo {

struct Range {
  uint64_t off = 0;
  uint64_t count = 0;
};

// Part `part` of `parts` contiguous, nearly equal parts of [0, total): the
// first (total % parts) parts are one element longer.
inline Range evenPart(uint64_t total, uint64_t parts, uint64_t part) {
  uint64_t base = total / parts, extra = total % parts;
  Range r;
  r.off = part * base + std::min(part, extra);
  r.count = base + (part < extra ? 1 : 0);
  return r;
}

// Elements one rank may send before it must receive, in a ring where every
// rank sends first: at most half the FIFO, so that a fused receive-and-send
// always finds a free slot downstream.
inline uint64_t ringChunkElems(const plan::FifoGeometry& g, uint32_t elemSize) {
  uint64_t slots = g.nSlots / 2;
  if (slots == 0) slots = 1;
  return slots * plan::pieceElems(g, elemSize);
}

// Channels actually used: never more channels than elements.
inline int usableChannels(int requested, uint64_t elems) {
  uint64_t c = requested < 1 ? 1 : uint64_t(requested);
  return int(std::min<uint64_t>(c, std::max<uint64_t>(elems, 1)));
}

}  // namespace weft::algo
