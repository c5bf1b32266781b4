// weft-doctor's command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace weft::doctor {

struct Options {
  int threads = 1;                  // ranks per process (-t)
  size_t pairBytes = 4 << 20;       // one message of the pairwise bandwidth test
  int pairIters = 4;                // messages per direction (after one warm-up)
  int latIters = 20;                // ping-pongs per pair
  std::vector<size_t> sizes = {64 << 10, 1 << 20, 16 << 20};  // sweep sizes (bytes, AllReduce and AllGather)
  int iters = 5;                    // timed calls per sweep size (after one warm-up)
  std::string sysfsRoot = "/sys";   // %h: the host's name
  std::string jsonPath;             // -o
  std::string saveBaseline;
  std::string baseline;
  double tolerance = 0.2;
  double latencySlackUs = 10;       // latency increases below this are noise, whatever the tolerance
  std::string historyDir;
  std::string plotTool;             // --plot-tool (default: weft-doctor-plot next to the binary)
  bool strict = false;              // findings without a baseline also fail the run
  double timeoutSec = 300;          // the whole run
  bool help = false;
};

struct ParsedOptions {
  Options options;
  std::string error;  // "" when valid
};

ParsedOptions parseOptions(int argc, char** argv);
std::string usageText();
// "64K" -> 65536; false when not a positive size.
bool parseSize(const std::string& text, size_t* bytes);

}  // namespace weft::doctor
