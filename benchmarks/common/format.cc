#include "benchmarks/common/format.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace weft::bench {
namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  int length = std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  if (length < 0) return std::string();
  return std::string(buffer, std::min<size_t>(static_cast<size_t>(length), sizeof buffer - 1));
}

}  // namespace

std::string versionLine(int headerCode, int libraryCode) {
  return printf_string("# nccl-tests version %s nccl-headers=%d nccl-library=%d\n", kFormatVersion, headerCode,
                       libraryCode);
}

std::string startLine(const std::string& testName) {
  return "# Collective test starting: " + testName + "\n";
}

std::string paramLine(const ParamLineFields& f) {
  std::string step = f.stepFactor > 1 ? printf_string("%zu(factor)", f.stepFactor)
                                      : printf_string("%zu(bytes)", f.stepBytes);
  return printf_string(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: %d unalign: 0\n",
      f.nThreads, f.nGpus, f.minBytes, f.maxBytes, step.c_str(), f.warmupIters, f.iters, f.aggIters, f.checkIters,
      f.graphLaunches);
}

std::string deviceLine(int rank, int group, int pid, const std::string& host, int device, const std::string& busId,
                       const std::string& deviceName) {
  return printf_string("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", rank, group, pid, host.c_str(),
                       device, busId.c_str(), deviceName.c_str());
}

std::string resultHeader() {
  std::string text = "#\n";
  // The first row only centres the two placement labels over their columns.
  text += printf_string("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
                        "", "", "", "", "");
  text += printf_string("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size", "count",
                        "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
                        "#wrong");
  text += printf_string("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
                        "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return text;
}

std::string fitNumber(double value, int width) {
  for (int decimals = 2; decimals >= 0; --decimals) {
    std::string text = printf_string("%.*f", decimals, value);
    if (static_cast<int>(text.size()) <= width) return text;
  }
  for (int decimals = std::max(0, width - 6); decimals >= 0; --decimals) {
    std::string text = printf_string("%.*e", decimals, value);
    if (static_cast<int>(text.size()) <= width || decimals == 0) return text;
  }
  return printf_string("%.0e", value);
}

std::string resultPrefix(size_t bytes, size_t count, const std::string& typeName, const std::string& opName,
                         int root) {
  return printf_string("%12zu  %12zu  %8s  %6s  %6d", bytes, count, typeName.c_str(), opName.c_str(), root);
}

std::string resultPart(double timeUs, double algBw, double busBw, long long wrong) {
  std::string text = printf_string("  %7s  %6s  %6s", fitNumber(timeUs, 7).c_str(), fitNumber(algBw, 6).c_str(),
                                   fitNumber(busBw, 6).c_str());
  if (wrong < 0) return text + "    N/A";
  return text + printf_string("  %6g", static_cast<double>(wrong));
}

std::string resultFooter(long long wrongTotal, double avgBusBw) {
  std::string text = printf_string("# %-20s : %lld %s\n", "Out of bounds values", wrongTotal,
                                   wrongTotal == 0 ? "OK" : "FAILED");
  text += printf_string("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, "");
  text += "#\n";
  return text;
}

std::string concludedLine(const std::string& testName) {
  return "# Collective test concluded: " + testName + "\n";
}

}  // namespace weft::bench
