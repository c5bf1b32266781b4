#include "src/core/tune_file.h"

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

#include "algorithms/registry.h"
#include "src/util/error.h"

namespace weft {
namespace {

double* fieldFor(algo::CostInputs* in, const std::string& key) {
  if (key == "shm_latency_us") return &in->intra.latencyUs;
  if (key == "shm_bandwidth_gbs") return &in->intra.bandwidthGBs;
  if (key == "net_latency_us") return &in->inter.latencyUs;
  if (key == "net_bandwidth_gbs") return &in->inter.bandwidthGBs;
  for (int a = 0; a < algo::algoCount(); a++) {
    const std::string& name = algo::algoInfo(algo::AlgoId(a)).name;
    algo::AlgoCalibration& cal = in->calibration(algo::AlgoId(a));
    if (key == "base_us." + name) return &cal.baseUs;
    if (key == "bw_scale." + name) return &cal.bwScale;
  }
  return nullptr;
}

// "measured.<algo>": the curve of that algorithm, else nullptr.
algo::MeasuredCurve* curveFor(algo::CostInputs* in, const std::string& key) {
  for (int a = 0; a < algo::algoCount(); a++)
    if (key == "measured." + algo::algoInfo(algo::AlgoId(a)).name) return &in->calibration(algo::AlgoId(a)).measured;
  return nullptr;
}

double number(const std::string& path, int lineNo, const std::string& key, const std::string& value) {
  char* end = nullptr;
  double v = strtod(value.c_str(), &end);
  if (value.empty() || *end || !(v >= 0) || v > 1e15)
    raise(weftInvalidArgument, "%s:%d: '%s' is not a valid value for %s", path.c_str(), lineNo, value.c_str(),
          key.c_str());
  return v;
}

}  // namespace

void loadTuneFile(const std::string& path, algo::CostInputs* in) {
  std::ifstream f(path);
  if (!f) raise(weftInvalidArgument, "WEFT_TUNE_FILE=%s cannot be read", path.c_str());
  readTune(f, path, in);
}

void readTune(std::istream& f, const std::string& path, algo::CostInputs* in) {
  std::string line;
  int lineNo = 0;
  algo::CostInputs read = *in;
  for (auto& c : read.calib) c.measured = algo::MeasuredCurve{};
  read.measuredRanks = read.measuredHosts = 0;
  while (std::getline(f, line)) {
    lineNo++;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key;
    if (!(words >> key)) continue;
    std::vector<std::string> values;
    for (std::string v; words >> v;) values.push_back(v);
    if (algo::MeasuredCurve* curve = curveFor(&read, key)) {
      if (values.size() != 2)
        raise(weftInvalidArgument, "%s:%d: expected '%s <bytes> <microseconds>'", path.c_str(), lineNo, key.c_str());
      if (!curve->add(number(path, lineNo, key, values[0]), number(path, lineNo, key, values[1])))
        raise(weftInvalidArgument,
              "%s:%d: %s: sizes must grow from line to line, times must be positive, at most %d points",
              path.c_str(), lineNo, key.c_str(), algo::kMaxMeasuredPoints);
      continue;
    }
    if (values.size() != 1)
      raise(weftInvalidArgument, "%s:%d: expected '%s <number>'", path.c_str(), lineNo, key.c_str());
    const double v = number(path, lineNo, key, values[0]);
    if (key == "direct_min_bytes") {
      if (v < 1 || v != double(uint64_t(v)))  // number() keeps v within uint64_t's range
        raise(weftInvalidArgument, "%s:%d: %s must be a positive integer", path.c_str(), lineNo, key.c_str());
      read.directMinBytes = uint64_t(v);
      continue;
    }
    if (key == "measured.nranks" || key == "measured.nhosts") {
      // The range first: converting a double beyond int's range is undefined.
      if (v < 1 || v > 1 << 20 || v != double(int(v)))
        raise(weftInvalidArgument, "%s:%d: %s must be a positive integer", path.c_str(), lineNo, key.c_str());
      (key == "measured.nranks" ? read.measuredRanks : read.measuredHosts) = int(v);
      continue;
    }
    double* field = fieldFor(&read, key);
    if (!field) raise(weftInvalidArgument, "%s:%d: unknown key '%s'", path.c_str(), lineNo, key.c_str());
    // The cost model divides by bandwidths and scales.
    if (v == 0 && (key.find("bandwidth") != std::string::npos || key.rfind("bw_scale.", 0) == 0))
      raise(weftInvalidArgument, "%s:%d: %s must be positive", path.c_str(), lineNo, key.c_str());
    *field = v;
  }
  bool anyCurve = read.directMinBytes > 0;
  for (const auto& c : read.calib) anyCurve |= c.measured.nPoints > 0;
  if (anyCurve && (read.measuredRanks == 0 || read.measuredHosts == 0))
    raise(weftInvalidArgument, "%s: measured curves and direct_min_bytes need measured.nranks and measured.nhosts",
          path.c_str());
  *in = read;
}

void saveTuneFile(const std::string& path, const algo::CostInputs& in, const std::string& comment) {
  std::ofstream f(path);
  if (!f) raise(weftSystemError, "cannot write tune file %s", path.c_str());
  f << std::setprecision(12);
  f << "# weft cost-model constants (load with WEFT_TUNE_FILE=" << path << ")\n";
  std::istringstream c(comment);
  for (std::string l; std::getline(c, l);) f << "# " << l << "\n";
  f << "shm_latency_us " << in.intra.latencyUs << "\n";
  f << "shm_bandwidth_gbs " << in.intra.bandwidthGBs << "\n";
  f << "net_latency_us " << in.inter.latencyUs << "\n";
  f << "net_bandwidth_gbs " << in.inter.bandwidthGBs << "\n";
  for (int a = 0; a < algo::algoCount(); a++) {
    const algo::AlgoCalibration& cal = in.calibration(algo::AlgoId(a));
    f << "base_us." << algo::algoName(algo::AlgoId(a)) << " " << cal.baseUs << "\n";
    f << "bw_scale." << algo::algoName(algo::AlgoId(a)) << " " << cal.bwScale << "\n";
  }
  if (in.measuredRanks > 0) {
    f << "# AllReduce medians per size (bytes, us), used by communicators of this shape\n";
    f << "measured.nranks " << in.measuredRanks << "\n";
    f << "measured.nhosts " << in.measuredHosts << "\n";
    for (int a = 0; a < algo::algoCount(); a++) {
      const algo::MeasuredCurve& c = in.calibration(algo::AlgoId(a)).measured;
      for (int i = 0; i < c.nPoints; i++)
        f << "measured." << algo::algoName(algo::AlgoId(a)) << " " << c.bytes[i] << " " << c.us[i] << "\n";
    }
    if (in.directMinBytes > 0) {
      f << "# registered buffers of this shape: single-copy from this size (weft-tune --registered)\n";
      f << "direct_min_bytes " << in.directMinBytes << "\n";
    }
  }
  if (!f) raise(weftSystemError, "writing tune file %s failed", path.c_str());
}

}  // namespace weft
