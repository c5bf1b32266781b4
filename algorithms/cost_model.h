// Cost model: an estimate of a collective's time per algorithm, from the
// per-hop latency and bandwidth of the links it crosses. Formulas are in
// docs/tuning.md; they only need to rank algorithms, not predict to the µs.
#pragma once

#include <cstdint>

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
};

// Estimated microseconds; +infinity when `a` does not implement `c`:
// baseUs + latency term + bwScale x bytes term.
double estimateUs(plan::Coll c, Algo a, const CostInputs& in);
// The analytic model's two terms alone (calibration fits against them).
double latencyTermUs(plan::Coll c, Algo a, const CostInputs& in);
double bytesTermUs(plan::Coll c, Algo a, const CostInputs& in);

}  // namespace weft::algo
