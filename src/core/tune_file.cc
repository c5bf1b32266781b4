#include "src/core/tune_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "src/util/error.h"

namespace weft {
namespace {

double* fieldFor(algo::CostInputs* in, const std::string& key) {
  if (key == "shm_latency_us") return &in->intra.latencyUs;
  if (key == "shm_bandwidth_gbs") return &in->intra.bandwidthGBs;
  if (key == "net_latency_us") return &in->inter.latencyUs;
  if (key == "net_bandwidth_gbs") return &in->inter.bandwidthGBs;
  for (int a = 0; a < algo::kNumAlgos; a++) {
    std::string name = algo::algoName(static_cast<algo::Algo>(a));
    if (key == "base_us." + name) return &in->baseUs[a];
    if (key == "bw_scale." + name) return &in->bwScale[a];
  }
  return nullptr;
}

}  // namespace

void loadTuneFile(const std::string& path, algo::CostInputs* in) {
  std::ifstream f(path);
  if (!f) raise(weftInvalidArgument, "WEFT_TUNE_FILE=%s cannot be read", path.c_str());
  std::string line;
  int lineNo = 0;
  while (std::getline(f, line)) {
    lineNo++;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key, value, extra;
    if (!(words >> key)) continue;
    double* field = fieldFor(in, key);
    if (!field) raise(weftInvalidArgument, "%s:%d: unknown key '%s'", path.c_str(), lineNo, key.c_str());
    char* end = nullptr;
    if (!(words >> value) || (words >> extra))
      raise(weftInvalidArgument, "%s:%d: expected '%s <number>'", path.c_str(), lineNo, key.c_str());
    double v = strtod(value.c_str(), &end);
    if (*end || !(v >= 0) || v > 1e12)
      raise(weftInvalidArgument, "%s:%d: '%s' is not a valid value for %s", path.c_str(), lineNo, value.c_str(),
            key.c_str());
    *field = v;
  }
}

void saveTuneFile(const std::string& path, const algo::CostInputs& in, const std::string& comment) {
  std::ofstream f(path);
  if (!f) raise(weftSystemError, "cannot write tune file %s", path.c_str());
  f << "# weft cost-model constants (load with WEFT_TUNE_FILE=" << path << ")\n";
  std::istringstream c(comment);
  for (std::string l; std::getline(c, l);) f << "# " << l << "\n";
  f << "shm_latency_us " << in.intra.latencyUs << "\n";
  f << "shm_bandwidth_gbs " << in.intra.bandwidthGBs << "\n";
  f << "net_latency_us " << in.inter.latencyUs << "\n";
  f << "net_bandwidth_gbs " << in.inter.bandwidthGBs << "\n";
  for (int a = 0; a < algo::kNumAlgos; a++) {
    std::string name = algo::algoName(static_cast<algo::Algo>(a));
    f << "base_us." << name << " " << in.baseUs[a] << "\n";
    f << "bw_scale." << name << " " << in.bwScale[a] << "\n";
  }
  if (!f) raise(weftSystemError, "writing tune file %s failed", path.c_str());
}

}  // namespace weft
