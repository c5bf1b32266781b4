#include "benchmarks/common/options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace weft::bench {
namespace {

std::optional<long> parseInt(const char* text) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return std::nullopt;
  return value;
}

}  // namespace

std::optional<size_t> parseSize(const std::string& text) {
  if (text.empty() || text[0] == '-') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str()) return std::nullopt;
  unsigned shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: return std::nullopt;
  }
  if (*end == 'B' || *end == 'b') ++end;  // "64KB" is common in scripts
  if (*end != '\0') return std::nullopt;
  if (shift && value > (~0ull >> shift)) return std::nullopt;
  return static_cast<size_t>(value << shift);
}

ParseResult parseOptions(int argc, char** argv) {
  ParseResult result;
  Options& o = result.options;
  static const option kLong[] = {
      {"nthreads", required_argument, nullptr, 't'},      {"ngpus", required_argument, nullptr, 'g'},
      {"minbytes", required_argument, nullptr, 'b'},      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},     {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},         {"agg_iters", required_argument, nullptr, 'm'},
      {"warmup_iters", required_argument, nullptr, 'w'},  {"parallel_init", required_argument, nullptr, 'p'},
      {"check", required_argument, nullptr, 'c'},         {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},      {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},      {"stream_null", required_argument, nullptr, 'y'},
      {"timeout", required_argument, nullptr, 'T'},       {"cudagraph", required_argument, nullptr, 'G'},
      {"report_cputime", required_argument, nullptr, 'C'}, {"average", required_argument, nullptr, 'a'},
      {"run_cycles", required_argument, nullptr, 'N'},    {"output_file", required_argument, nullptr, 'J'},
      {"local_register", required_argument, nullptr, 'R'}, {"unalign", required_argument, nullptr, 'u'},
      {"mem", required_argument, nullptr, 1000},          {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  auto fail = [&](const std::string& message) {
    result.error = message;
    return result;
  };
  // 0, not 1: glibc then also forgets where it was inside the previous
  // argv (a later parse would read a freed argument otherwise).
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:a:J:R:u:x:I:K:S:M:D:V:h", kLong,
                          nullptr)) != -1) {
    const std::string arg = optarg ? optarg : "";
    auto intArg = [&](int minimum) -> std::optional<int> {
      auto value = parseInt(arg.c_str());
      if (!value || *value < minimum || *value > 1000000000) return std::nullopt;
      return static_cast<int>(*value);
    };
    std::optional<int> value;
    switch (c) {
      case 't': if (!(value = intArg(1))) return fail("invalid -t (threads): " + arg); o.nThreads = *value; break;
      case 'g': if (!(value = intArg(1))) return fail("invalid -g (GPUs per thread): " + arg); o.nGpus = *value; break;
      case 'b': { auto s = parseSize(arg); if (!s) return fail("invalid -b (min bytes): " + arg); o.minBytes = *s; break; }
      case 'e': { auto s = parseSize(arg); if (!s) return fail("invalid -e (max bytes): " + arg); o.maxBytes = *s; break; }
      case 'i': { auto s = parseSize(arg); if (!s) return fail("invalid -i (step bytes): " + arg); o.stepBytes = *s; break; }
      case 'f': if (!(value = intArg(1))) return fail("invalid -f (step factor): " + arg); o.stepFactor = *value; break;
      case 'n': if (!(value = intArg(1))) return fail("invalid -n (iterations): " + arg); o.iters = *value; break;
      case 'm': if (!(value = intArg(1))) return fail("invalid -m (aggregated ops): " + arg); o.aggIters = *value; break;
      case 'w': if (!(value = intArg(0))) return fail("invalid -w (warmup iterations): " + arg); o.warmupIters = *value; break;
      case 'N': if (!(value = intArg(0))) return fail("invalid -N (run cycles): " + arg); o.runCycles = *value; break;
      case 'p': if (!(value = intArg(0))) return fail("invalid -p: " + arg); o.parallelInit = *value; break;
      case 'c': if (!(value = intArg(0))) return fail("invalid -c (check iterations): " + arg); o.checkIters = *value; break;
      case 'o': { auto ops = parseOps(arg); if (!ops) return fail("invalid -o (op): " + arg + " (sum prod min max avg mulsum all)"); o.ops = *ops; break; }
      case 'd': { auto types = parseTypes(arg); if (!types) return fail("invalid -d (datatype): " + arg); o.types = *types; break; }
      case 'r':
        if (arg == "all") { o.root = -1; break; }
        if (!(value = intArg(0))) return fail("invalid -r (root): " + arg);
        o.root = *value;
        break;
      case 'z': if (!(value = intArg(0)) || *value > 3) return fail("invalid -z (blocking 0..3): " + arg); o.blocking = *value; break;
      case 'y': if (!(value = intArg(0))) return fail("invalid -y: " + arg); o.streamNull = *value; break;
      case 'a': if (!(value = intArg(0)) || *value > 3) return fail("invalid -a (average 0..3): " + arg); o.average = *value; break;
      case 'T': {
        char* end = nullptr;
        double seconds = std::strtod(arg.c_str(), &end);
        if (end == arg.c_str() || *end != '\0' || seconds < 0) return fail("invalid -T (timeout seconds): " + arg);
        o.timeoutSec = seconds;
        break;
      }
      case 'J': o.jsonPath = arg; break;
      case 1000:
        if (arg == "host") o.memory = MemoryKind::Host;
        else if (arg == "device") o.memory = MemoryKind::Device;
        else return fail("invalid --mem: " + arg + " (host or device)");
        o.memoryGiven = true;
        break;
      case 'G': if (!(value = intArg(0))) return fail("invalid -G (graph launches): " + arg); o.graphLaunches = *value; break;
      case 'R': if (!(value = intArg(0)) || *value > 2) return fail("invalid -R (local_register 0..2): " + arg); o.localRegister = *value; break;
      case 'C': case 'u': case 'x': case 'I': case 'K': case 'S': case 'M': case 'D': case 'V':
        if (arg != "0") o.ignored.push_back(std::string("-") + static_cast<char>(c) + " " + arg);
        break;
      case 'h': o.help = true; break;
      default:
        return fail(std::string("unknown or incomplete option: ") + (optind > 0 && optind <= argc ? argv[optind - 1] : "?"));
    }
  }
  if (optind < argc) return fail(std::string("unexpected argument: ") + argv[optind]);
  if (o.minBytes > o.maxBytes) return fail("-b (min bytes) is larger than -e (max bytes)");
  if (o.stepFactor <= 1 && o.stepBytes == 0) return fail("-i 0 with no -f would never end the sweep");
  // An additive step small against the range (-e 1T -i 1) would make a
  // sweep of billions of sizes, held in memory before the first runs.
  if (o.stepFactor <= 1 && (o.maxBytes - o.minBytes) / o.stepBytes >= kMaxSweepSizes)
    return fail("-b " + std::to_string(o.minBytes) + " -e " + std::to_string(o.maxBytes) + " -i " +
                std::to_string(o.stepBytes) + " would visit more than " + std::to_string(kMaxSweepSizes) +
                " sizes (use a larger -i, or -f)");
  return result;
}

MemoryChoice chooseMemory(const Options& o, int gpus, const std::string& noGpu) {
  MemoryChoice c;
  const std::string several = "-g " + std::to_string(o.nGpus) + ": several GPUs per thread need device buffers";
  if (o.memoryGiven && o.memory == MemoryKind::Host) {
    if (o.nGpus > 1) c.error = several + " (drop --mem host)";
    c.info = "host buffers (--mem host)";
  } else if (gpus > 0) {
    c.memory = MemoryKind::Device;
    c.info = "device buffers (" + std::to_string(gpus) + " GPU(s) visible)";
  } else if (o.memoryGiven) {
    c.error = "--mem device: " + noGpu;
  } else {
    if (o.nGpus > 1) c.error = several + ", and there are none: " + noGpu;
    c.info = "host buffers: " + noGpu;
  }
  if (c.error.empty() && c.memory == MemoryKind::Host && o.graphLaunches > 0)
    c.info += "; -G " + std::to_string(o.graphLaunches) + " ignored: CUDA graphs need device buffers";
  return c;
}

int gpuFor(int procRank, int nThreads, int nGpus, int tid, int gpuIndex, int visibleGpus) {
  const long slot = (static_cast<long>(procRank) * nThreads + tid) * nGpus + gpuIndex;
  return visibleGpus > 0 ? static_cast<int>(slot % visibleGpus) : 0;
}

std::vector<size_t> sweepSizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t size = options.minBytes; size <= options.maxBytes;) {
    sizes.push_back(size);
    size_t next = options.stepFactor > 1 ? size * options.stepFactor : size + options.stepBytes;
    if (next <= size) break;  // overflow, or a zero start with a factor
    size = next;
  }
  return sizes;
}

std::string usageText(const char* program) {
  std::ostringstream out;
  out << "USAGE: " << program << " [options]\n"
      << "  -t,--nthreads <n>        ranks as threads in this process (default 1)\n"
      << "  -g,--ngpus <n>           GPUs (ranks) per thread (default 1; more needs device buffers)\n"
      << "  -b,--minbytes <size>     smallest size, suffix K/M/G (default 32M)\n"
      << "  -e,--maxbytes <size>     largest size (default 32M)\n"
      << "  -i,--stepbytes <size>    additive step (default 1M)\n"
      << "  -f,--stepfactor <n>      multiplicative step (instead of -i)\n"
      << "  -n,--iters <n>           timed iterations (default 20)\n"
      << "  -w,--warmup_iters <n>    untimed iterations per size (default 1)\n"
      << "  -m,--agg_iters <n>       ops per iteration inside one group call (default 1)\n"
      << "  -N,--run_cycles <n>      repeat the sweep n times, 0 forever (default 1)\n"
      << "  -c,--check <n>           checked iterations, 0 disables (default 1)\n"
      << "  -o,--op <op>             sum prod min max avg mulsum all (default sum)\n"
      << "  -d,--datatype <type>     int8 uint8 int32 uint32 int64 uint64 half float double\n"
      << "                           bfloat16 f8e4m3 f8e5m2 all (default float)\n"
      << "  -r,--root <rank|all>     root of rooted collectives (default 0)\n"
      << "  -z,--blocking <0..3>     wait for each op (1: and barrier) (default 0)\n"
      << "  -R,--local_register <0..2> 1, 2: buffers from weftMemAlloc, registered (single-copy on one host)\n"
      << "  -y,--stream_null <0|1>   use no stream: every call blocks (default 0)\n"
      << "  -a,--average <0..3>      time across ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)\n"
      << "  -T,--timeout <sec>       fail a test that runs longer (default off)\n"
      << "  -J,--output_file <file>  also write the results as JSON\n"
      << "  -G,--cudagraph <n>       capture the -n iterations as a CUDA graph, launch it n times (device buffers)\n"
      << "  --mem host|device        buffer memory (default: device when built with CUDA and a GPU is visible)\n"
      << "  -h,--help                this text\n"
      << "Launching: see docs/benchmarks.md (threads, weft-run, mpirun, WEFT_RANK/WEFT_NRANKS/WEFT_COMM_ID).\n";
  return out.str();
}

}  // namespace weft::bench
