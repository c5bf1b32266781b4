#include "process_ranks.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <new>
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

// The deadline a run gets: the test's own, times PROCESS_RANKS_DEADLINE_SCALE
// when that is set (an integer 1..100). Sanitizer builds set it
// (tools/sanitize.sh): ThreadSanitizer slows every rank several times over,
// so a healthy run would outlive deadlines sized for plain builds. Bounds a
// test checks itself (an error within N ms) are not scaled.
int64_t scaledDeadlineMs(int64_t deadlineMs) {
  const char* v = std::getenv("PROCESS_RANKS_DEADLINE_SCALE");
  if (!v || !*v) return deadlineMs;
  char* end = nullptr;
  long scale = std::strtol(v, &end, 10);
  if (*end != '\0' || scale < 1 || scale > 100) {
    fprintf(stderr, "PROCESS_RANKS_DEADLINE_SCALE=%s ignored: expected an integer 1..100\n", v);
    return deadlineMs;
  }
  return deadlineMs * scale;
}

struct SharedId {
  std::atomic<int> state{0};  // 0 not yet, 1 ready, 2 rank 0 failed
  weftUniqueId id;
};

// Rank 0 publishes the id, the others wait for it (until the run's deadline).
bool shareUniqueId(int rank, SharedId* shared, int64_t deadlineMs, weftUniqueId* id) {
  if (rank == 0) {
    weftResult_t rc = weftGetUniqueId(&shared->id);
    if (rc != weftSuccess) {
      fprintf(stderr, "rank 0: weftGetUniqueId failed: %s (%s)\n", weftGetErrorString(rc), weftGetLastError(nullptr));
      shared->state.store(2);
      return false;
    }
    *id = shared->id;
    shared->state.store(1);
    return true;
  }
  for (;;) {
    int s = shared->state.load();
    if (s == 1) {
      *id = shared->id;
      return true;
    }
    if (s == 2 || nowMs() > deadlineMs) {
      fprintf(stderr, "rank %d: no unique id from rank 0%s\n", rank, s == 2 ? " (it failed to make one)" : "");
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A child that outlived the deadline is stuck somewhere no bound covers:
// say where before killing it, so a rare hang in CI leaves a trace. Each
// thread's kernel wait channel and system call, then user-space stacks from
// eu-stack (elfutils) or gdb when one is installed.
void reportStuckChild(int rank, pid_t pid) {
  fprintf(stderr, "---- rank %d (pid %d) outlived the deadline; its threads:\n", rank, pid);
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(task.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      auto first = [&](const char* file) {
        std::ifstream f(task + "/" + e->d_name + "/" + file);
        std::string line;
        std::getline(f, line);
        return line;
      };
      fprintf(stderr, "  tid %s (%s): wchan %s, syscall %s\n", e->d_name, first("comm").c_str(),
              first("wchan").c_str(), first("syscall").c_str());
    }
    closedir(d);
  }
  fflush(stderr);
  const std::string p = std::to_string(pid);
  const std::string cmd =
      "if command -v eu-stack >/dev/null 2>&1; then timeout 30 eu-stack -p " + p +
      " 1>&2; elif command -v gdb >/dev/null 2>&1; then timeout 60 gdb -p " + p +
      " -batch -nx -ex 'thread apply all bt' 1>&2 2>/dev/null; else echo '  (no eu-stack or gdb: no stacks)' 1>&2; fi";
  if (system(cmd.c_str()) != 0) fprintf(stderr, "  (stack dump command failed)\n");
}

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
  // Rank 0 makes the id and hands it over through a shared page, as an MPI
  // job would broadcast it: the parent stays single-threaded (a bootstrap
  // root thread running in it while it forks would leave each child a copy
  // of whatever that thread had locked).
  auto* shared = static_cast<SharedId*>(
      mmap(nullptr, sizeof(SharedId), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) {
    for (auto& c : result.children) c.exitCode = 98;
    perror("mmap");
    return result;
  }
  new (shared) SharedId();
  fflush(nullptr);  // nothing buffered may be written twice
  const int64_t start = nowMs();
  const int64_t deadlineMs = scaledDeadlineMs(options.deadlineMs);
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
        weftUniqueId id;
        if (!shareUniqueId(r, shared, start + deadlineMs, &id)) {
          fflush(nullptr);
          _exit(98);
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
    if (nowMs() - start > deadlineMs) {
      result.timedOut = true;
      for (int r = 0; r < n; r++)
        if (!done[r]) reportStuckChild(r, pids[r]);
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
  munmap(shared, sizeof(SharedId));
  return result;
}

int initOrReport(weftComm_t* comm, int n, const weftUniqueId& id, int rank) {
  weftResult_t rc = weftCommInitRank(comm, n, id, rank);
  if (rc != weftSuccess)
    fprintf(stderr, "rank %d: weftCommInitRank: %s (%s)\n", rank, weftGetErrorString(rc), weftGetLastError(nullptr));
  return rc == weftSuccess ? 0 : 2;
}

}  // namespace weft::test
