// Rank 0's part of a weft-doctor run: it assembles the ranks' reports into
// a Result, checks the baseline before anything is measured, and at the
// end prints the report and the verdict and writes the files.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/weft-doctor/counters.h"
#include "tools/weft-doctor/options.h"
#include "tools/weft-doctor/result.h"

namespace weft::doctor {

// Exit statuses.
inline constexpr int kExitRegressed = 1;  // regressions against the baseline (or findings with --strict)
inline constexpr int kExitUsage = 2;      // bad options, unreadable or unwritable files
inline constexpr int kExitRefused = 3;    // a baseline that cannot be compared

nlohmann::json snapshotToJson(const SysfsSnapshot& s);
SysfsSnapshot snapshotFromJson(const nlohmann::json& j);

class RankZero {
 public:
  RankZero(const Options& o, int nranks) : o_(o), nranks_(nranks) {}
  // From every rank's self description (JSON: rank, host, names,
  // transports): the hosts, ranks and transport pairs; then the baseline is
  // read and checked. 0: go on; else the exit status (the reason printed).
  int start(const std::vector<std::string>& infos);
  // From every rank's measurements and counters: the report, the files and
  // the verdict. Returns the exit status.
  int finish(const std::vector<std::string>& parts, double seconds);

 private:
  int writeOutputs();
  int compare();

  const Options& o_;
  int nranks_;
  Result result_;
  Result baseline_;
  bool haveBaseline_ = false;
};

// DIR/weft-doctor-<UTC date and time>.json; then the trend plot
// (weft-doctor-plot DIR), which says so and does nothing without
// matplotlib. Returns "" or what went wrong.
std::string keepHistory(const Result& r, const std::string& dir, const std::string& plotTool);

}  // namespace weft::doctor
