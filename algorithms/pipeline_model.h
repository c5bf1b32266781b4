// How an algorithm should run one call: how many channels and what slice
// (the piece that moves through a FIFO slot at a time). Chains and trees are
// pipelines: with S slices through D hops a call takes (D + S - 1) stages,
// so smaller slices fill the pipeline sooner but each costs a hand-off (the
// hop latency). Rings move a block per step on every rank at once and gain
// nothing from smaller slices. Channels divide the data; they help only
// when one channel cannot reach the link's bandwidth (channelBwGBs); their
// hand-offs overlap where each has a path of its own (channelBwGBs set) and
// are paid one after another on a shared one.
// Formulas in docs/tuning.md.
#pragma once

#include <cstdint>

#include "algorithms/cost_model.h"
#include "algorithms/plan.h"

namespace weft::algo {

constexpr uint64_t kMinSliceBytes = 4096;

// Microseconds for `a` to run `c` on in.bytes with this many channels and
// this slice, by the pipeline model.
double pipelinedUs(plan::Coll c, AlgoId a, const CostInputs& in, int channels, uint64_t sliceBytes);

struct CallShape {
  int nChannels = 1;
  uint64_t sliceBytes = 0;
  double us = 0;  // pipelinedUs of this shape
};

// The channel count (1..in.maxChannels) and slice (the FIFO's slot, halved
// down to kMinSliceBytes) with the least pipelined time; ties go to fewer
// channels and larger slices.
CallShape shapeCall(plan::Coll c, AlgoId a, const CostInputs& in, const plan::FifoGeometry& g);

}  // namespace weft::algo
