#include "process_ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

namespace weft::test {
namespace {

// weft reads WEFT_DEBUG* once per process, at its first log call, so the
// settings must exist before any test runs; children inherit the open file.
// INIT-level lines say which transport each connection uses, which the
// socket tests check.
std::string logPath() {
  static const std::string path = "/tmp/weft-process-test-" + std::to_string(getpid()) + ".log";
  return path;
}

struct LogSetup {
  LogSetup() {
    setenv("WEFT_DEBUG", "INFO", 1);
    setenv("WEFT_DEBUG_SUBSYS", "INIT", 1);
    setenv("WEFT_DEBUG_FILE", logPath().c_str(), 1);
  }
  ~LogSetup() { unlink(logPath().c_str()); }
};
LogSetup logSetup;

}  // namespace

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

long logFileEnd() {
  std::ifstream f(logPath(), std::ios::ate);
  return f ? static_cast<long>(f.tellg()) : 0;
}

std::string logTextSince(long offset) {
  std::ifstream f(logPath());
  if (!f) return "";
  f.seekg(offset);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string ProcessRunResult::failures(const std::vector<int>& expectKilled) const {
  std::ostringstream o;
  if (timedOut) o << "deadline passed after " << elapsedMs << " ms; children still running were killed\n";
  for (size_t r = 0; r < children.size(); r++) {
    const ChildOutcome& c = children[r];
    bool killExpected = false;
    for (int k : expectKilled) killExpected |= k == static_cast<int>(r);
    if (killExpected) {
      if (!c.signaled) o << "rank " << r << ": expected to be killed, exited with " << c.exitCode << "\n";
      continue;
    }
    if (c.signaled) o << "rank " << r << ": killed by signal " << c.signal << "\n";
    else if (c.exitCode != 0) o << "rank " << r << ": exit code " << c.exitCode << "\n";
  }
  return o.str();
}

ProcessRunResult runRankProcesses(int n, const std::function<int(int, const weftUniqueId&)>& body,
                                  const ProcessRunOptions& options) {
  ProcessRunResult result;
  result.children.resize(n);
  weftUniqueId id;
  if (weftResult_t rc = weftGetUniqueId(&id); rc != weftSuccess) {
    for (auto& c : result.children) c.exitCode = 98;
    fprintf(stderr, "weftGetUniqueId failed in the parent: %s\n", weftGetErrorString(rc));
    return result;
  }
  fflush(nullptr);  // nothing buffered may be written twice
  const int64_t start = nowMs();
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 99;
      try {
        if (options.env)
          for (const auto& [k, v] : options.env(r).vars) {
            if (v.empty()) unsetenv(k.c_str());
            else setenv(k.c_str(), v.c_str(), 1);
          }
        code = body(r, id);
      } catch (const std::exception& e) {
        fprintf(stderr, "rank %d (pid %d): exception: %s\n", r, getpid(), e.what());
      } catch (...) {
        fprintf(stderr, "rank %d (pid %d): unknown exception\n", r, getpid());
      }
      fflush(nullptr);
      _exit(code);
    }
    if (pid < 0) {
      perror("fork");
      for (int k = 0; k < r; k++) kill(pids[k], SIGKILL);
      for (int k = 0; k < r; k++) waitpid(pids[k], nullptr, 0);
      for (auto& c : result.children) c.exitCode = 97;
      return result;
    }
    pids[r] = pid;
  }
  if (options.whileRunning) options.whileRunning(pids);

  int left = n;
  std::vector<bool> done(n, false);
  while (left > 0) {
    for (int r = 0; r < n; r++) {
      if (done[r]) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got != pids[r]) continue;
      done[r] = true;
      left--;
      ChildOutcome& c = result.children[r];
      c.signaled = WIFSIGNALED(status);
      if (c.signaled) c.signal = WTERMSIG(status);
      else c.exitCode = WEXITSTATUS(status);
    }
    if (left == 0) break;
    if (nowMs() - start > options.deadlineMs) {
      result.timedOut = true;
      for (int r = 0; r < n; r++)
        if (!done[r]) kill(pids[r], SIGKILL);
      for (int r = 0; r < n; r++)
        if (!done[r]) {
          int status = 0;
          waitpid(pids[r], &status, 0);
          result.children[r].signaled = true;
          result.children[r].signal = SIGKILL;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.elapsedMs = nowMs() - start;
  return result;
}

}  // namespace weft::test
