// What one run says on its own, without a baseline: fallbacks to TCP, slow
// and asymmetric links (against the run's own median), and the counters'
// findings (counters.h).
#pragma once

#include <utility>
#include <vector>

#include "tools/weft-doctor/result.h"

namespace weft::doctor {

// A link under this share of the median inter-host bandwidth is slow.
inline constexpr double kSlowLinkShare = 0.5;
// A pair whose two directions differ by more than this factor is asymmetric.
inline constexpr double kAsymmetry = 2.0;

std::vector<Finding> transportFindings(const Result& r);
std::vector<Finding> linkFindings(const Result& r);
// All of the above and counterFindings, in that order.
std::vector<Finding> analyze(const Result& r);

// The pairs of hosts 0..n-1, in n-1 rounds (n even; n rounds when odd, one
// host idle in each) in which no host appears twice: every host pair is
// timed once, and the pairs of a round run at the same time.
std::vector<std::vector<std::pair<int, int>>> pairRounds(int nHosts);

}  // namespace weft::doctor
