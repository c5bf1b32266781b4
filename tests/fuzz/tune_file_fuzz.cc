// Tune files (WEFT_TUNE_FILE; src/core/tune_file.h): what weft-tune wrote,
// or what someone edited. Whatever loads must leave the cost model with
// values it can divide by.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "algorithms/registry.h"
#include "src/core/tune_file.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream text(std::string(reinterpret_cast<const char*>(data), size));
  algo::CostInputs in;
  try {
    readTune(text, "fuzz.tune", &in);
  } catch (const Error&) {
    return 0;
  }
  WEFT_FUZZ_CHECK(in.intra.bandwidthGBs > 0 && std::isfinite(in.intra.bandwidthGBs));
  WEFT_FUZZ_CHECK(in.inter.bandwidthGBs > 0 && std::isfinite(in.inter.bandwidthGBs));
  for (int a = 0; a < algo::algoCount(); a++) {
    const algo::AlgoCalibration& cal = in.calibration(algo::AlgoId(a));
    WEFT_FUZZ_CHECK(cal.bwScale > 0 && std::isfinite(cal.bwScale));
    WEFT_FUZZ_CHECK(cal.measured.nPoints >= 0 && cal.measured.nPoints <= algo::kMaxMeasuredPoints);
  }
  return 0;
}
