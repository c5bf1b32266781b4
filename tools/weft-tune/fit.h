// From measured AllReduce medians to the cost model's inputs: the analytic
// constants fitted at the smallest and largest sizes (what communicators of
// other shapes use) and the measured curves themselves (what communicators
// of the measured shape use).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/cost_model.h"
#include "algorithms/registry.h"
#include "tools/weft-tune/interleaved_timing.h"

namespace weft::tune {

// Each interior point whose two neighbours lie within a factor 2 of its
// size replaced by the least-squares line through the three points in
// log time over log size, taken at its size (for sizes a factor 2 apart:
// the geometric mean of the three). On a host with more ranks than cores
// one size's median still swings by about 10% from run to run,
// independently per size, while the true curves change smoothly; over
// sizes that close log time is nearly linear in log size away from the
// latency knee, so the line is close to unbiased and cuts that noise by
// about sqrt(3). Farther apart (a sweep with -f 4) a curve bends too much
// between neighbours: a mean across the ring's knee from latency to
// bandwidth moved the 2 MB point of one algorithm by 20% and reversed the
// order of two, so those points are kept as measured.
std::vector<double> smoothLogLog(const std::vector<uint64_t>& bytes, const std::vector<double>& us);

// The algorithms weft-tune times and calibrates: every registered one that
// implements AllReduce, in registry order. SweepPoint::medianUs[k] is the
// time of calibratedAlgos()[k].
std::vector<algo::AlgoId> calibratedAlgos();

// points[i].medianUs is indexed as calibratedAlgos(). `start` holds
// the communicator's topology-derived inputs; `network`: fit the network
// link's constants (ranks over sockets) instead of shared memory's.
// Several calibrations of the same shape and sizes (separate runs: on an
// oversubscribed host a run's scheduling settles into a state that favours
// one algorithm or another for its whole length, which interleaving within
// the run cannot average out) combined point by point: the median of each
// constant; at each curve size the best median time, and every algorithm at
// that time x its worst ratio to the best of any single run, so that the
// selector picks the algorithm that was never far from the best (minimax
// regret). Throws std::invalid_argument when shapes or sizes differ.
algo::CostInputs mergeCalibrations(const std::vector<algo::CostInputs>& runs);

// The threshold a communicator's single-copy path starts at (weft-tune
// --registered, CostInputs::directMinBytes): the smallest measured size from
// which the direct column (points[i].medianUs[nAlgos]) is at least as fast
// as every algorithm at that size and every larger one; kDirectNever when
// it loses at the largest.
inline constexpr uint64_t kDirectNever = uint64_t(1e15);
uint64_t directThreshold(const std::vector<SweepPoint>& points, size_t nAlgos);

algo::CostInputs fitCostInputs(const algo::CostInputs& start, const std::vector<SweepPoint>& points, bool network);

}  // namespace weft::tune
