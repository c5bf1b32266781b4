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

// Elements of the unit every split point of a call falls on: boundaries
// at multiples of CollArgs::alignBytes from the buffer's start (so a
// 16-byte-aligned buffer keeps every block 16-byte aligned and the device
// kernel's vector loads apply), or of one element when alignBytes is 0 or
// not a multiple of the element size.
inline uint64_t splitUnit(const CollArgs& a) {
  if (a.alignBytes <= a.elemSize || a.elemSize == 0 || a.alignBytes % a.elemSize) return 1;
  return a.alignBytes / a.elemSize;
}

// Part `part` of `parts` contiguous parts of [0, total) whose boundaries
// are multiples of `unit` elements: units are shared as evenly as
// evenPart shares elements, and the part holding the end takes the
// partial unit. With unit 1 this is evenPart.
inline Range alignedPart(uint64_t total, uint64_t parts, uint64_t part, uint64_t unit) {
  if (unit <= 1) return evenPart(total, parts, part);
  const Range u = evenPart((total + unit - 1) / unit, parts, part);
  const uint64_t lo = std::min(total, u.off * unit), hi = std::min(total, (u.off + u.count) * unit);
  return {lo, hi - lo};
}

// Elements one rank may send before it must receive, in a ring where every
// rank sends first: at most half the FIFO, so that a fused receive-and-send
// always finds a free slot downstream.
inline uint64_t ringChunkElems(const plan::FifoGeometry& g, uint32_t elemSize) {
  uint64_t slots = g.nSlots / 2;
  if (slots == 0) slots = 1;
  return slots * plan::pieceElems(g, elemSize);
}

// A chunk of `elems` elements rounded down to whole units (never below one
// unit), so loops stepping by it keep their blocks aligned.
inline uint64_t alignedChunk(uint64_t elems, uint64_t unit) {
  if (unit <= 1) return elems;
  return std::max<uint64_t>(unit, elems / unit * unit);
}

// Channels actually used: never more channels than elements.
inline int usableChannels(int requested, uint64_t elems) {
  uint64_t c = requested < 1 ? 1 : uint64_t(requested);
  return int(std::min<uint64_t>(c, std::max<uint64_t>(elems, 1)));
}

// Channels a call uses: never more than split units, so no channel is empty.
inline int usableChannels(const CollArgs& a) {
  const uint64_t unit = splitUnit(a);
  return usableChannels(a.nChannels, (a.count + unit - 1) / unit);
}

// Channel c's part of the call's elements.
inline Range channelPart(const CollArgs& a, int nch, int c) {
  return alignedPart(a.count, uint64_t(nch), uint64_t(c), splitUnit(a));
}

}  // namespace weft::algo
