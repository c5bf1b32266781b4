// Shared by the algorithm tests: build every rank's plan of one call and run
// the verifier on them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "algorithms/coll_args.h"
#include "algorithms/plan.h"
#include "algorithms/verify.h"

namespace weft::test {

using Builder = std::function<plan::Plan(const algo::CollArgs&)>;

inline std::vector<plan::Plan> plansFor(const Builder& build, algo::CollArgs a) {
  std::vector<plan::Plan> plans;
  for (int r = 0; r < a.nranks; r++) {
    a.rank = r;
    plans.push_back(build(a));
  }
  return plans;
}

inline verify::Problem problemFor(const Builder& build, const algo::CollArgs& a, bool inPlace) {
  verify::Problem p = verify::collectiveProblem(a.coll, a.nranks, a.count, a.root, inPlace, a.geometry);
  p.plans = plansFor(build, a);
  return p;
}

inline std::string label(const algo::CollArgs& a, bool inPlace) {
  return std::string(plan::collName(a.coll)) + " n=" + std::to_string(a.nranks) + " count=" + std::to_string(a.count) +
         " root=" + std::to_string(a.root) + " ch=" + std::to_string(a.nChannels) +
         (inPlace ? " in-place" : " out-of-place") + " slot=" + std::to_string(a.geometry.slotBytes) + "x" +
         std::to_string(a.geometry.nSlots);
}

// Small slots make every count span many pieces and chunks.
inline plan::FifoGeometry tinyFifo() {
  plan::FifoGeometry g;
  g.slotBytes = 64;  // 16 four-byte elements
  g.nSlots = 4;
  return g;
}

// Rank counts for the long verifier sweeps: the CI run takes the edges of
// the range and the counts around powers of two and primes (where slices and
// trees change shape); the rest run under `ctest -L long`.
inline bool inCiSample(int n) {
  static const int kSample[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,
                                23, 24, 31, 32, 33, 47, 48, 63, 64, 65, 96, 97, 127, 128};
  for (int s : kSample)
    if (s == n) return true;
  return false;
}

inline std::vector<int> sweepRanks(int lo, int hi, bool ciSample) {
  std::vector<int> out;
  for (int n = lo; n <= hi; n++)
    if (inCiSample(n) == ciSample) out.push_back(n);
  return out;
}

}  // namespace weft::test
