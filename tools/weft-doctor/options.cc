#include "tools/weft-doctor/options.h"

#include <cstdlib>

namespace weft::doctor {

bool parseSize(const std::string& text, size_t* bytes) {
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  switch (*end) {
    case 'K': case 'k': v *= 1 << 10; end++; break;
    case 'M': case 'm': v *= 1 << 20; end++; break;
    case 'G': case 'g': v *= 1 << 30; end++; break;
    default: break;
  }
  if (*end || !(v >= 1) || v > double(1ull << 40)) return false;
  *bytes = size_t(v);
  return true;
}

namespace {

bool parseInt(const std::string& text, int lo, int hi, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || v < lo || v > hi) return false;
  *out = int(v);
  return true;
}

bool parseList(const std::string& text, std::vector<size_t>* sizes) {
  sizes->clear();
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    size_t b;
    if (!parseSize(text.substr(at, end - at), &b)) return false;
    sizes->push_back(b);
    at = end + 1;
  }
  return !sizes->empty();
}

// One option with its value; "" when fine.
std::string apply(Options& o, const std::string& a, const std::string& v) {
  const std::string bad = a + ": invalid value '" + v + "'";
  if (a == "-t") return parseInt(v, 1, 1024, &o.threads) ? "" : bad;
  if (a == "--pair-bytes") return parseSize(v, &o.pairBytes) ? "" : bad;
  if (a == "--pair-iters") return parseInt(v, 1, 1000, &o.pairIters) ? "" : bad;
  if (a == "--lat-iters") return parseInt(v, 1, 10000, &o.latIters) ? "" : bad;
  if (a == "--sizes") return parseList(v, &o.sizes) ? "" : bad + " (a list such as 64K,1M,16M)";
  if (a == "--iters") return parseInt(v, 1, 10000, &o.iters) ? "" : bad;
  if (a == "--sysfs-root") o.sysfsRoot = v;
  else if (a == "-o" || a == "--json") o.jsonPath = v;
  else if (a == "--save-baseline") o.saveBaseline = v;
  else if (a == "--baseline") o.baseline = v;
  else if (a == "--history") o.historyDir = v;
  else if (a == "--plot-tool") o.plotTool = v;
  else if (a == "--tolerance") {
    char* end = nullptr;
    o.tolerance = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(o.tolerance > 0 && o.tolerance < 1)) return bad + " (a fraction between 0 and 1)";
  } else if (a == "--latency-slack") {
    char* end = nullptr;
    o.latencySlackUs = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(o.latencySlackUs >= 0)) return bad + " (microseconds)";
  } else if (a == "--timeout") {
    char* end = nullptr;
    o.timeoutSec = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(o.timeoutSec > 0)) return bad + " (seconds)";
  } else {
    return "unknown option " + a;
  }
  return "";
}

}  // namespace

ParsedOptions parseOptions(int argc, char** argv) {
  ParsedOptions p;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      p.options.help = true;
      continue;
    }
    if (a == "--strict") {
      p.options.strict = true;
      continue;
    }
    if (a.empty() || a[0] != '-') {
      p.error = "unexpected argument " + a;
      return p;
    }
    if (i + 1 >= argc) {
      p.error = a + " needs a value";
      return p;
    }
    p.error = apply(p.options, a, argv[++i]);
    if (!p.error.empty()) return p;
  }
  return p;
}

std::string usageText() {
  return "usage: weft-doctor [-t THREADS] [--sizes 64K,1M,16M] [--iters N] [--pair-bytes 4M] [--pair-iters N]\n"
         "                   [--lat-iters N] [--sysfs-root DIR] [-o FILE] [--save-baseline FILE]\n"
         "                   [--baseline FILE [--tolerance 0.2] [--latency-slack 10]] [--history DIR] [--strict]\n"
         "                   [--timeout S]\n"
         "Checks a cluster from every rank of a job (weft-run, mpirun, Slurm, torchrun: one rank per process;\n"
         "-t N: N ranks as threads of each process): the transport between every pair of ranks and why, a\n"
         "bandwidth and latency matrix between hosts, an AllReduce and AllGather sweep, and the NIC counters\n"
         "(sysfs) before and after it. Rank 0 prints the report.\n"
         "  -o FILE               the result as JSON\n"
         "  --save-baseline FILE  store the result as the baseline of later runs\n"
         "  --baseline FILE       compare with a baseline; exit 1 when a link, host or size regressed by more\n"
         "                        than --tolerance (a fraction, default 0.2); exit 3 when the baseline is\n"
         "                        from another cluster, layout, weft version or format; a latency must also\n"
         "                        have grown by --latency-slack microseconds (default 10)\n"
         "  --history DIR         keep DIR/weft-doctor-<UTC date>.json and plot DIR/trend.png\n"
         "  --sysfs-root DIR      read counters under DIR instead of /sys (%h: the host's name)\n"
         "  --strict              exit 1 on any finding (fallback to TCP, slow link, counters) too\n"
         "See docs/doctor.md.\n";
}

}  // namespace weft::doctor
