// weft-tune --check's verdict at one size: how much slower the selector's
// choice ran than the best algorithm, from interleaved samples.
//
// The ratio is the median over rounds of the two algorithms' samples in the
// same round (a paired comparison), not a ratio of medians: a round times
// every communicator back to back, so load from other processes that lasts
// a round slows both alike and cancels in the pair, where it can shift one
// median and not the other. The noise figure is the spread of the best
// algorithm's own samples (interquartile range over median), for the reader
// to judge a ratio against.
#pragma once

#include <cstddef>
#include <vector>

namespace weft::tune {

struct ChoiceVerdict {
  size_t best = 0;     // index of the fastest column by median
  double ratio = 1;    // choice over best, paired per round (>= 1 unless the choice wins more rounds)
  double noise = 0;    // interquartile range / median of the best column's samples
};

// samples[k][r]: column k's time in round r (every column has the same
// rounds); medians[k] its median. `chosen` is the selector's column.
ChoiceVerdict judgeChoice(const std::vector<std::vector<double>>& samples, const std::vector<double>& medians,
                          size_t chosen);

// The q-quantile (0..1) of v by linear interpolation; 0 for an empty v.
double quantile(std::vector<double> v, double q);

}  // namespace weft::tune
