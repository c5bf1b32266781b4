// Ranks as separate processes on this host.
//
// The parent forks one child per rank and stays single-threaded; rank 0
// makes the unique id (its bootstrap root thread lives in rank 0) and shares
// it with the others. A child sets its environment before its first weft
// call, runs a body, reports problems on stderr and leaves with _exit(code):
// it never returns into GoogleTest. The parent waits with a
// deadline and SIGKILLs every child that outlives it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

struct ChildEnv {
  // Applied with setenv in the child before the body runs; "" unsets.
  std::map<std::string, std::string> vars;
};

struct ProcessRunOptions {
  int64_t deadlineMs = 60000;
  // Environment for rank r (called in the child).
  std::function<ChildEnv(int rank)> env;
  // Runs in the parent right after the children started (e.g. to kill one
  // or to poke at a listener); the deadline clock is already running.
  std::function<void(const std::vector<pid_t>& pids)> whileRunning;
};

struct ChildOutcome {
  int exitCode = -1;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
};

struct ProcessRunResult {
  std::vector<ChildOutcome> children;
  bool timedOut = false;  // some child outlived the deadline and was killed
  int64_t elapsedMs = 0;
  // "" when every child exited with code 0, else what went wrong per rank.
  std::string failures(const std::vector<int>& expectKilled = {}) const;
};

// Runs body(rank, id) in n child processes, returns how each ended. The body's
// return value is the child's exit code; an exception is reported and exits 99.
ProcessRunResult runRankProcesses(int n, const std::function<int(int rank, const weftUniqueId& id)>& body,
                                  const ProcessRunOptions& options = {});

// Environment that the debug log of every process of this test binary goes
// to a file (set before any weft call, see process_ranks.cc): the text the
// log gained since `offset`, and the current end of the file.
std::string logTextSince(long offset);
long logFileEnd();

// Milliseconds on a monotonic clock.
int64_t nowMs();

// weftCommInitRank in a child: 0 on success, else 2 after naming the error
// (and weft's last error message) on stderr.
int initOrReport(weftComm_t* comm, int n, const weftUniqueId& id, int rank);

}  // namespace weft::test
