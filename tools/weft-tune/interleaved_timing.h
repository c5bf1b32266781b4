// Times AllReduce on several communicators over the same ranks, interleaved:
// each round runs every communicator once, in an order rotated by the round,
// so that drifts in machine load (other processes, frequency, the kernel's
// scheduling of oversubscribed ranks) hit all of them alike. A sample is the
// slowest rank's mean time per call over `iters` calls; the result per
// communicator is the median sample. Comparing medians of interleaved samples
// is what makes algorithm rankings reproducible on a loaded machine, where
// one-off runs per algorithm swing by 2x.
#pragma once

#include <cstddef>
#include <vector>

#include "weft/weft.h"

namespace weft::tune {

struct SweepOptions {
  std::vector<size_t> sizes;  // bytes of float32 data per AllReduce
  int rounds = 15;  // doubled where a sample is a single call
  double sampleUs = 20000;  // target duration of one sample
  // Buffers from weftMemAlloc, registered with every timed communicator:
  // calls may run single-copy (algorithms/direct.h) where a communicator's
  // threshold lets them.
  bool registered = false;
};

struct SweepPoint {
  size_t bytes = 0;
  int iters = 0;                  // calls per sample
  std::vector<double> medianUs;   // per timed communicator
  std::vector<std::vector<double>> samplesUs;  // per timed communicator, per round (same round: back to back)
  std::vector<long> wrong;        // elements off the exact sum, all ranks, per communicator
};

// Every rank calls this with its handles: `sync` (synchronisation and the
// reduction of timings) and `timed` (same length on every rank). Each call
// of each communicator is checked once per size against the exact integer
// sum of the inputs. Returns the same points on every rank.
std::vector<SweepPoint> sweepAllReduce(weftComm_t sync, const std::vector<weftComm_t>& timed, int rank, int nranks,
                                       const SweepOptions& o);

// Sizes from min to max, multiplying by factor (the max always included).
std::vector<size_t> sweepSizes(size_t min, size_t max, double factor);

double median(std::vector<double> v);

}  // namespace weft::tune
