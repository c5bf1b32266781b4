#include "algorithms/pipeline_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/registry.h"

namespace weft::algo {

double pipelinedUs(plan::Coll c, AlgoId a, const CostInputs& in, int channels, uint64_t sliceBytes) {
  if (!algoSupports(a, c)) return std::numeric_limits<double>::infinity();
  const int n = std::max(in.nranks, 1);
  if (n == 1) return in.intra.latencyUs;
  const double L = hopLatencyUs(in);
  const double ch = std::max(channels, 1);
  // The bytes term at the bandwidth these channels reach.
  const double W = linkBytesPerUs(in);
  const double reach = in.channelBwGBs > 0 ? std::min(W, ch * 1e3 * in.channelBwGBs) : W;
  const AlgoCalibration& cal = in.calibration(a);
  const double bytesUs = bytesTermUs(c, a, in) * cal.bwScale * W / std::max(reach, 1e-9);
  const double perChannel = double(in.bytes) / ch;
  const double slice = double(std::max<uint64_t>(sliceBytes, 1));
  // Each channel's hand-offs: channels with paths of their own (a NIC or a
  // peer link each: channelBwGBs) wait on them side by side, as the
  // executors run them (the host executor moves whichever channel can, the
  // device one runs a block per channel), so a slice's latency is paid once
  // per round of the channels. On one shared path (one executor thread
  // doing every channel's copies over shared memory) they are paid one
  // after another.
  const double handoffs = in.channelBwGBs > 0 ? 1.0 : ch;
  const auto ringSteps = algoInfo(a).ringSteps;
  if (const double steps = ringSteps ? ringSteps(c, n) : 0.0; steps > 0) {
    // Steps in sequence, each moving one block per rank in S slices, each
    // slice a hop: the latency term (the steps' hops, at the latency of the
    // link each crosses) S times over. For a flat ring that is steps x S x
    // the hop latency; a hierarchical ring has short hops in the host and
    // long ones across hosts, and far fewer steps than 2(n-1).
    const double S = std::max(1.0, std::ceil(perChannel / n / slice));
    return cal.baseUs + latencyTermUs(c, a, in) * S * handoffs + bytesUs;
  }
  // A pipeline: depth in hops from the model's latency term. k pipelines
  // on the same links (pipelinesPerChannel) each move S pieces of 1/k of
  // the bytes: (depth + S - 1) stages, each a hand-off; the steady stages
  // move every pipeline's piece through the busiest link (bytesUs in all),
  // a filling stage one pipeline's piece over one link (bytesUs / kS).
  const double depth = std::max(1.0, std::round(latencyTermUs(c, a, in) / std::max(L, 1e-9)));
  const auto share = algoInfo(a).pipelineShare;
  const double k = std::max(algoInfo(a).pipelinesPerChannel, 1);
  const double S = std::max(1.0, std::ceil(perChannel * (share ? share(c, in) : 1.0) / k / slice));
  return cal.baseUs + (depth + S - 1) * handoffs * L + bytesUs + (depth - 1) * bytesUs / (k * S);
}

CallShape shapeCall(plan::Coll c, AlgoId a, const CostInputs& in, const plan::FifoGeometry& g) {
  CallShape best;
  best.sliceBytes = g.slotBytes;
  best.us = std::numeric_limits<double>::infinity();
  const int maxCh = std::max(in.maxChannels, 1);
  for (int ch = 1; ch <= maxCh; ch++)
    for (uint64_t s = g.slotBytes;; s /= 2) {
      // Halves that still hold the whole call are one piece, as the slot
      // is: skip them (to smaller slices, which may pipeline), not stop.
      if (s == g.slotBytes || s < in.bytes) {
        const double t = pipelinedUs(c, a, in, ch, s);
        // A shape must be clearly better (1%) to displace a simpler one.
        if (t < best.us * 0.99) best = {ch, s, t};
      }
      if (s / 2 < kMinSliceBytes || (s / 2) % 64) break;
    }
  return best;
}

}  // namespace weft::algo
