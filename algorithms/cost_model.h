// Cost model: an estimate of a collective's time per algorithm, from the
// per-hop latency and bandwidth of the links it crosses. Formulas are in
// docs/tuning.md; they only need to rank algorithms, not predict to the µs.
#pragma once

#include <cstdint>

#include "algorithms/measured_curve.h"
#include "algorithms/plan.h"

namespace weft::algo {

enum class Algo : uint8_t { Ring, Tree, DoubleTree };
constexpr int kNumAlgos = 3;
const char* algoName(Algo a);
bool algoSupports(Algo a, plan::Coll c);

struct LinkParams {
  double latencyUs = 1.0;
  double bandwidthGBs = 10.0;  // GB/s = bytes per ns
};

struct CostInputs {
  int nranks = 1;
  int nHosts = 1;      // ranks spread evenly over this many hosts
  uint64_t bytes = 0;  // nccl-tests "size": AllReduce/Broadcast/Reduce buffer,
                       // AllGather receive total, ReduceScatter send total
  LinkParams intra;    // within a host (shm)
  LinkParams inter;    // between hosts (network)
  // Calibration (tools/weft-tune): a fixed cost per call and a factor on
  // the bytes term, per algorithm, measured on the running machine. The
  // defaults (0 and 1) leave the analytic model as it is.
  double baseUs[kNumAlgos] = {0, 0, 0};
  double bwScale[kNumAlgos] = {1, 1, 1};
  // Channels a call may use (connections exist for this many), and the
  // bandwidth one channel can carry (0: one channel reaches the link's; then
  // more channels only add per-slice costs, as on one host's shared memory
  // where one executor thread does every channel's copies).
  int maxChannels = 1;
  double channelBwGBs = 0;
  // Measured AllReduce curves (tools/weft-tune), valid for communicators of
  // exactly measuredRanks ranks on measuredHosts hosts; 0: none.
  int measuredRanks = 0;
  int measuredHosts = 0;
  MeasuredCurve measured[kNumAlgos];
};

// Whether estimateUs reads AllReduce times from in.measured[a].
bool usesMeasuredCurve(plan::Coll c, Algo a, const CostInputs& in);

// Estimated microseconds; +infinity when `a` does not implement `c`:
// baseUs + latency term + bwScale x bytes term, or the measured curve where
// one matches the communicator (usesMeasuredCurve).
double estimateUs(plan::Coll c, Algo a, const CostInputs& in);
// The link a call's steps wait on: per-hop latency and bandwidth (bytes/µs).
double hopLatencyUs(const CostInputs& in);
double linkBytesPerUs(const CostInputs& in);
// The analytic model's two terms alone (calibration fits against them).
double latencyTermUs(plan::Coll c, Algo a, const CostInputs& in);
double bytesTermUs(plan::Coll c, Algo a, const CostInputs& in);

}  // namespace weft::algo
