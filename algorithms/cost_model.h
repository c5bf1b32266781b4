// Cost model: an estimate of a collective's time per algorithm, from the
// per-hop latency and bandwidth of the links it crosses. Each algorithm's
// analytic terms are its registry entry's (algorithms/registry.h); this file
// adds calibration and the measured curves. Formulas are in docs/tuning.md;
// they only need to rank algorithms, not predict to the µs.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/measured_curve.h"
#include "algorithms/plan.h"

namespace weft::algo {

// An algorithm: an index into the registry (algorithms/registry.h). The
// built-ins come first, in this order, on every rank; other entries follow
// in the order they are registered.
enum class AlgoId : uint8_t {};
inline constexpr AlgoId kRing{0};        // "ring"
inline constexpr AlgoId kBinaryTree{1};  // "binarytree": one binary tree
inline constexpr AlgoId kDoubleTree{2};  // "tree": NCCL's double binary tree
inline constexpr AlgoId kHier{3};        // "hier": host rings + rail rings (hierarchical.h)
// Registry capacity: CostInputs holds a calibration slot for each, so that
// it stays trivially copyable (it is all-gathered as bytes at init).
constexpr int kMaxAlgos = 8;
// The most runs of consecutive ranks on one host CostInputs lists (64 x 8
// GPUs fits; a longer placement falls back to even blocks).
constexpr int kMaxHostRuns = 64;
constexpr int index(AlgoId a) { return static_cast<int>(a); }

struct LinkParams {
  double latencyUs = 1.0;
  double bandwidthGBs = 10.0;  // GB/s = bytes per ns
};

// Calibration of one algorithm (tools/weft-tune), measured on the running
// machine: a fixed cost per call, a factor on the bytes term, and measured
// AllReduce times. The defaults leave the analytic model as it is, so an
// algorithm nobody calibrated is estimated by its formulas alone.
struct AlgoCalibration {
  double baseUs = 0;
  double bwScale = 1;
  MeasuredCurve measured;
};

struct CostInputs {
  int nranks = 1;
  int nHosts = 1;      // hosts the ranks are on
  int nicsPerHost = 1;  // NICs a host's ranks spread their network traffic over (rails)
  // The fewest and the most ranks on one host; 0: spread evenly
  // (ceil(nranks / nHosts) each). Uneven hosts change what the
  // hierarchical algorithms cost (hier_algo.cc).
  int hostRanksMin = 0;
  int hostRanksMax = 0;
  // The hosts in rank order: hostRuns[i] consecutive ranks on host
  // hostRunHost[i], for i < nHostRuns (a host whose ranks are not
  // consecutive has several runs).
  // 0 runs: not known, or more than kMaxHostRuns; a list that does not add
  // up to nranks is ignored. Algorithms over rank numbers (the binary tree)
  // read which of their edges cross hosts from it (hostOfRanks).
  int nHostRuns = 0;
  uint16_t hostRuns[kMaxHostRuns] = {};
  uint16_t hostRunHost[kMaxHostRuns] = {};
  uint64_t bytes = 0;  // nccl-tests "size": AllReduce/Broadcast/Reduce buffer,
                       // AllGather receive total, ReduceScatter send total
  LinkParams intra;    // within a host (shm)
  LinkParams inter;    // between hosts (network)
  // Channels a call may use (connections exist for this many), and the
  // bandwidth one channel can carry (0: one channel reaches the link's; then
  // more channels only add per-slice costs, as on one host's shared memory
  // where one executor thread does every channel's copies).
  int maxChannels = 1;
  double channelBwGBs = 0;
  // Across hosts of unequal NICs (inter is the slowest): how much faster
  // than 2B at inter the double tree's busiest host moves its share
  // (algo::doubleTreeNetScale; a slow host that is a leaf in both trees
  // carries B). 1 on hosts alike.
  double treeNetScale = 1;
  // The call's buffers are GPU memory: protocols may carry other algorithms
  // there (ProtoInfo::onDevice).
  bool deviceBuffers = false;
  // Measured AllReduce curves (AlgoCalibration::measured) are valid for
  // communicators of exactly measuredRanks ranks on measuredHosts hosts; 0: none.
  int measuredRanks = 0;
  int measuredHosts = 0;
  // The smallest call (nccl-tests bytes) that runs single-copy on registered
  // buffers (algorithms/direct.h), as weft-tune --registered measured it;
  // 0: not measured (WEFT_DIRECT_MIN_BYTES's default applies). A setting
  // WEFT_DIRECT_MIN_BYTES given explicitly wins over it.
  uint64_t directMinBytes = 0;
  // Per algorithm, indexed by AlgoId; every slot starts neutral.
  AlgoCalibration calib[kMaxAlgos];

  AlgoCalibration& calibration(AlgoId a) { return calib[index(a)]; }
  const AlgoCalibration& calibration(AlgoId a) const { return calib[index(a)]; }
};

// An algorithm's analytic estimate in two parts, so that calibration can
// scale the bytes term alone.
struct CostTerms {
  double latUs;
  double bytesUs;
};

// Fills hostRanksMin/Max and the runs from each rank's host (hostOf[r]:
// host index of rank r).
void setHostPlacement(CostInputs& in, const std::vector<int>& hostOf);
// The host of each of in.nranks ranks: from the runs where they add up to
// nranks, else blocks of ceil(nranks / nHosts) in rank order.
std::vector<int> hostOfRanks(const CostInputs& in);

// Whether estimateUs reads AllReduce times from a's measured curve.
bool usesMeasuredCurve(plan::Coll c, AlgoId a, const CostInputs& in);

// Estimated microseconds; +infinity when `a` does not implement `c`:
// baseUs + latency term + bwScale x bytes term, or the measured curve where
// one matches the communicator (usesMeasuredCurve).
double estimateUs(plan::Coll c, AlgoId a, const CostInputs& in);
// The link a call's steps wait on: per-hop latency and bandwidth (bytes/µs).
double hopLatencyUs(const CostInputs& in);
double linkBytesPerUs(const CostInputs& in);
// The analytic model's two terms alone (calibration fits against them).
double latencyTermUs(plan::Coll c, AlgoId a, const CostInputs& in);
double bytesTermUs(plan::Coll c, AlgoId a, const CostInputs& in);

}  // namespace weft::algo
