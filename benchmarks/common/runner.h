// What the perf binaries' main() shares with the threads that run the ranks.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "benchmarks/common/collective.h"
#include "benchmarks/common/launch.h"
#include "benchmarks/common/options.h"
#include "benchmarks/common/team.h"
#include "weft/weft.h"

namespace weft::bench {

// A failed library call ends the whole process: the other ranks of the job
// then see a dead peer and stop too, as with nccl-tests.
[[noreturn]] void fatal(const std::string& message);
void checkCall(weftResult_t result, const char* call, weftComm_t comm);
#define WEFT_BENCH_CALL(call, comm) ::weft::bench::checkCall((call), #call, (comm))

class Watchdog;

struct ResultRow {
  size_t bytes, count;
  std::string type, redop;
  int root;
  bool inPlace;
  double timeUs, algBw, busBw;
  long long wrong;
};

// -J: the results as JSON.
void writeJson(const std::string& path, CollKind kind, const Options& o, int nranks, const std::vector<ResultRow>& rows,
               long long wrongTotal, double avgBusBw);

struct Shared {
  CollKind kind;
  Options options;
  MemoryKind memory = MemoryKind::Host;  // chooseMemory's answer
  int visibleGpus = 0;
  LaunchInfo launch;
  int nranks;
  weftUniqueId id;
  Team* team;
  Watchdog* watchdog;
  std::atomic<int> exitStatus{0};
};

// Arms the -T watchdog for the next measurement.
void armWatchdog(Watchdog* watchdog);

// One thread of the process: its -g ranks, their sweeps, then teardown.
void runThread(Shared& shared, int tid);

}  // namespace weft::bench
