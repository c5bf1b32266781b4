// A run against a stored baseline: whether the two can be compared at all
// (same cluster, same weft and format), and what regressed beyond a tolerance.
#pragma once

#include <string>
#include <vector>

#include "tools/weft-doctor/result.h"

namespace weft::doctor {

struct CompareOptions {
  double tolerance = 0.2;  // a bandwidth under (1 - t) x baseline, a latency over (1 + t) x baseline
  double latFloorUs = 10;  // latency changes smaller than this are noise
};

struct Verdict {
  bool refused = false;
  std::string refusal;            // why the baseline cannot be compared
  std::vector<Finding> regressions;  // kind: transport, link_bandwidth, link_latency, sweep
  std::vector<Finding> improvements;
  int compared = 0;               // how many links, points and pairs were compared
};

// "" when `baseline` may be compared with `current`; else the reason
// (another format, another weft version, other hosts or ranks).
std::string incompatibility(const Result& baseline, const Result& current);
Verdict compareWithBaseline(const Result& baseline, const Result& current, const CompareOptions& o);
// The readable verdict; `what` names the baseline (its path).
std::string verdictText(const Verdict& v, const Result& baseline, const std::string& what, const CompareOptions& o);
// "0.1.0" from WEFT_VERSION_CODE's 100.
std::string versionText(int code);

}  // namespace weft::doctor
