// Command-line options of the perf binaries: the nccl-tests flag set, parsed
// without touching the library so the parser can be tested on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/common/dtype.h"

namespace weft::bench {

enum class MemoryKind { Host, Device };

struct Options {
  int nThreads = 1;
  int nGpus = 1;
  size_t minBytes = 32 << 20;
  size_t maxBytes = 32 << 20;
  size_t stepBytes = 1 << 20;
  size_t stepFactor = 1;  // > 1: multiply instead of adding stepBytes
  int iters = 20;
  int warmupIters = 1;
  int aggIters = 1;
  int runCycles = 1;     // 0: repeat forever
  int checkIters = 1;    // 0: no checking, "#wrong" prints N/A
  std::vector<BenchOp> ops{BenchOp::Sum};
  std::vector<weftDataType_t> types{weftFloat32};
  int root = 0;          // -1: every rank in turn ("-r all")
  int blocking = 0;      // -z
  int streamNull = 0;    // -y
  int localRegister = 0; // -R: 1 (and 2): weftMemAlloc buffers registered with the communicator
  int average = 1;       // -a: 0 rank 0, 1 mean, 2 min, 3 max
  double timeoutSec = 0; // -T: 0 disables
  std::string jsonPath;  // -J
  MemoryKind memory = MemoryKind::Host;
  bool memoryGiven = false;  // --mem on the command line; else chooseMemory decides
  int graphLaunches = 0;     // -G: capture the iterations as a CUDA graph, launch it this many times
  int parallelInit = 0;  // -p: accepted, threads always initialise in parallel
  bool help = false;
  // Flags we accept for command-line compatibility but do not act on
  // (CTA policy, cputime, unalign, ...).
  std::vector<std::string> ignored;
};

// Parses "8", "64K", "1M", "2G" (binary multiples, as nccl-tests does).
std::optional<size_t> parseSize(const std::string& text);

struct ParseResult {
  Options options;
  std::string error;  // empty when the command line was valid
};

// argv[0] is skipped. Rooted/unrooted and op/no-op distinctions are the
// caller's: everything is accepted here.
ParseResult parseOptions(int argc, char** argv);

// Host or device buffers, as nccl-tests does: device memory when the build
// has CUDA and a GPU is visible, unless --mem host says otherwise. `info`
// says what was chosen and why (printed at INFO); `error` is set for a
// command line this machine cannot run (--mem device or -g N > 1 without a
// GPU). `noGpu` is why there is no GPU when gpus is 0.
struct MemoryChoice {
  MemoryKind memory = MemoryKind::Host;
  std::string info;
  std::string error;
};
MemoryChoice chooseMemory(const Options& options, int gpus, const std::string& noGpu);

// The GPU rank `gpuIndex` of thread `tid` of process `procRank` uses (ranks
// share GPUs round-robin when there are more ranks than GPUs).
int gpuFor(int procRank, int nThreads, int nGpus, int tid, int gpuIndex, int visibleGpus);

// The sizes a sweep visits, in bytes, before per-collective rounding; at
// most kMaxSweepSizes (parseOptions refuses more).
inline constexpr size_t kMaxSweepSizes = 1 << 16;
std::vector<size_t> sweepSizes(const Options& options);

std::string usageText(const char* program);

}  // namespace weft::bench
