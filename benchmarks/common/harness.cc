#include "benchmarks/common/harness.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/common/device.h"
#include "benchmarks/common/format.h"
#include "benchmarks/common/runner.h"
#include "benchmarks/common/launch.h"
#include "benchmarks/common/options.h"
#include "benchmarks/common/team.h"
#include "benchmarks/common/verify.h"
#include "weft/weft.h"

namespace weft::bench {

using Clock = std::chrono::steady_clock;

// Ends the process when one measurement runs longer than -T seconds: a hung
// collective would otherwise hang the benchmark.
class Watchdog {
 public:
  explicit Watchdog(double seconds) : seconds_(seconds) {
    if (seconds_ <= 0) return;
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const long long deadline = deadlineNs_.load();
        const long long now = Clock::now().time_since_epoch().count();
        if (deadline != 0 && now > deadline) {
          fatal("a test ran longer than the -T timeout (" + std::to_string(seconds_) + " s)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~Watchdog() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void arm() {
    if (seconds_ <= 0) return;
    const auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds_));
    deadlineNs_ = (Clock::now() + span).time_since_epoch().count();
  }

 private:
  double seconds_;
  std::atomic<long long> deadlineNs_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

namespace {

std::string jsonEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string validate(const Options& o, CollKind kind, int nranks) {
  if (isRooted(kind) && o.root >= nranks) {
    return "-r " + std::to_string(o.root) + ": root must be below the number of ranks (" + std::to_string(nranks) + ")";
  }
  return "";
}

}  // namespace

void fatal(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "weft-tests error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void checkCall(weftResult_t result, const char* call, weftComm_t comm) {
  if (result == weftSuccess) return;
  const char* detail = weftGetLastError(comm);
  fatal(std::string(call) + " failed: " + weftGetErrorString(result) + (detail && *detail ? std::string(": ") + detail : ""));
}

void armWatchdog(Watchdog* watchdog) { watchdog->arm(); }

void writeJson(const std::string& path, CollKind kind, const Options& o, int nranks, const std::vector<ResultRow>& rows,
               long long wrongTotal, double avgBusBw) {
  std::ofstream out(path);
  if (!out) fatal("cannot write the JSON output file " + path);
  out << "{\n  \"format\": \"weft-tests-1\",\n  \"test\": \"" << testName(kind) << "\",\n"
      << "  \"weft_version\": " << WEFT_VERSION_CODE << ",\n  \"nranks\": " << nranks << ",\n"
      << "  \"nthreads\": " << o.nThreads << ",\n  \"iters\": " << o.iters << ",\n  \"agg_iters\": " << o.aggIters
      << ",\n  \"warmup_iters\": " << o.warmupIters << ",\n  \"check_iters\": " << o.checkIters << ",\n"
      << "  \"results\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& r = rows[i];
    out << "    {\"size\": " << r.bytes << ", \"count\": " << r.count << ", \"type\": \"" << jsonEscape(r.type)
        << "\", \"redop\": \"" << jsonEscape(r.redop) << "\", \"root\": " << r.root << ", \"placement\": \""
        << (r.inPlace ? "in-place" : "out-of-place") << "\", \"time_us\": " << r.timeUs
        << ", \"algbw_gbps\": " << r.algBw << ", \"busbw_gbps\": " << r.busBw << ", \"wrong\": ";
    if (r.wrong < 0) out << "null"; else out << r.wrong;
    out << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ],\n  \"out_of_bounds\": " << wrongTotal << ",\n  \"avg_busbw_gbps\": " << avgBusBw << "\n}\n";
}

int benchMain(CollKind kind, int argc, char** argv) {
  ParseResult parsed = parseOptions(argc, argv);
  const char* program = argc > 0 ? argv[0] : testName(kind);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "%s: %s\n%s", program, parsed.error.c_str(), usageText(program).c_str());
    return 2;
  }
  if (parsed.options.help) {
    std::fputs(usageText(program).c_str(), stdout);
    return 0;
  }
  std::string launchError;
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  Shared shared;
  shared.kind = kind;
  shared.options = parsed.options;
  shared.launch = detectLaunch(env, mpiAvailable(), &launchError);
  if (!launchError.empty()) {
    std::fprintf(stderr, "%s: %s\n", program, launchError.c_str());
    return 2;
  }
  const Options& o = shared.options;
  if (shared.launch.mpi) mpiInit(&argc, &argv);
  std::string noGpu;
  shared.visibleGpus = gpu::visibleGpus(&noGpu);
  const MemoryChoice memory = chooseMemory(o, shared.visibleGpus, noGpu);
  shared.memory = memory.memory;
  shared.nranks = shared.launch.nProcs * o.nThreads * o.nGpus;
  std::string error = memory.error.empty() ? validate(o, kind, shared.nranks) : memory.error;
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s\n", program, error.c_str());
    if (shared.launch.mpi) mpiFinalize();
    return 2;
  }
  for (const std::string& flag : o.ignored) std::fprintf(stderr, "%s: ignoring %s (not supported)\n", program, flag.c_str());
  if (shared.launch.procRank == 0) std::fprintf(stderr, "%s: INFO %s\n", program, memory.info.c_str());

  // The unique id: one process makes it and shares it in memory; MPI jobs
  // broadcast rank 0's; other launches build it on every process from
  // WEFT_COMM_ID (rank 0's bootstrap address), so nothing is exchanged.
  if (shared.launch.nProcs > 1 && !shared.launch.mpi && !std::getenv("WEFT_COMM_ID")) {
    std::fprintf(stderr,
                 "%s: launched as %d processes (%s) without MPI: set WEFT_COMM_ID=<ip>:<port> of rank 0 "
                 "(benchmarks/weft-run does)\n",
                 program, shared.launch.nProcs, shared.launch.rankSource.c_str());
    return 2;
  }
  if (!shared.launch.mpi || shared.launch.procRank == 0) {
    WEFT_BENCH_CALL(weftGetUniqueId(&shared.id), nullptr);
  }
  if (shared.launch.mpi) mpiBroadcastBytes(&shared.id, sizeof shared.id, 0);

  const bool printer = shared.launch.procRank == 0;
  if (printer) {
    int libraryVersion = 0;
    weftGetVersion(&libraryVersion);
    std::string text = versionLine(WEFT_VERSION_CODE, libraryVersion) + startLine(testName(kind));
    text += paramLine({o.nThreads, o.nGpus, o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor, o.warmupIters,
                       o.iters, o.aggIters, o.checkIters, shared.memory == MemoryKind::Device ? o.graphLaunches : 0});
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }

  Team team(o.nThreads, shared.launch.nProcs);
  Watchdog watchdog(o.timeoutSec);
  shared.team = &team;
  shared.watchdog = &watchdog;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.nThreads; ++t) {
    threads.emplace_back([&shared, t] {
      try {
        runThread(shared, t);
      } catch (const std::exception& e) {
        fatal(e.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (printer) {
    std::fputs(concludedLine(testName(kind)).c_str(), stdout);
    std::fflush(stdout);
  }
  if (shared.launch.mpi) mpiFinalize();
  return shared.exitStatus.load();
}

}  // namespace weft::bench
