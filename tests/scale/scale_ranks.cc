// Many ranks on one machine: P processes of T thread ranks each initialise
// one communicator of P x T ranks, run an AllReduce and an AllToAll and
// check both; each process then reports its descriptors, threads and
// resident memory (for docs/scaling.md).
//
//   scale_ranks <processes> <threads per process> [count] [deadline s]
//
// SCALE_ALLTOALL_CALLS=k runs k AllToAll calls (each checked) and prints
// the slowest rank's time of each: what keeping connections between calls
// saves shows from the second on.
//
// The processes agree on the id through WEFT_COMM_ID (a free loopback port
// below the ephemeral range, chosen here) and WEFT_COMM_SECRET. Exit code 0
// only when every rank of every process checked its results.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

int openDescriptors() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (d && readdir(d)) ++n;
  if (d) closedir(d);
  return n - 3;  // ".", ".." and the directory's own descriptor
}

long statusField(const char* name) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  const size_t len = strlen(name);
  while (f && fgets(line, sizeof(line), f))
    if (strncmp(line, name, len) == 0 && line[len] == ':') {
      v = atol(line + len + 1);
      break;
    }
  if (f) fclose(f);
  return v;
}

template <class T>
void raiseTo(std::atomic<T>* peak, T v) {
  for (T m = peak->load(); v > m && !peak->compare_exchange_weak(m, v);) {}
}

struct Peak {
  std::atomic<int> fds{0};
  std::atomic<long> threads{0}, rssKb{0};
  // The slowest rank's time in each phase, in ms.
  static constexpr int kMaxCalls = 16;
  std::atomic<long> initMs{0}, allReduceMs{0}, allToAllMs[kMaxCalls] = {};
  std::atomic<int> calls{0};  // AllToAll calls made by every rank
  void sample() {
    int f = openDescriptors();
    long t = statusField("Threads"), r = statusField("VmRSS");
    raiseTo(&fds, f);
    raiseTo(&threads, t);
    raiseTo(&rssKb, r);
  }
};

long msSince(std::chrono::steady_clock::time_point* t) {
  const auto now = std::chrono::steady_clock::now();
  const long ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(now - *t).count());
  *t = now;
  return ms;
}

// One thread rank: init, AllReduce (sum of rank+1 over every element),
// AllToAll (block j of rank r carries r*1000+j), checks, destroy.
bool runRank(int rank, int nranks, size_t count, Peak* peak, std::string* why) {
  weftUniqueId id;
  weftComm_t comm = nullptr;
  auto t = std::chrono::steady_clock::now();
  if (weftGetUniqueId(&id) != weftSuccess || weftCommInitRank(&comm, nranks, id, rank) != weftSuccess) {
    *why = std::string("init: ") + weftGetLastError(nullptr);
    return false;
  }
  raiseTo(&peak->initMs, msSince(&t));
  peak->sample();
  std::vector<float> in(count, static_cast<float>(rank + 1)), out(count, 0.f);
  bool ok = weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, comm, nullptr) == weftSuccess;
  raiseTo(&peak->allReduceMs, msSince(&t));
  const float expect = static_cast<float>(nranks) * (nranks + 1) / 2;
  for (size_t i = 0; ok && i < count; ++i)
    if (out[i] != expect) {
      *why = "AllReduce element " + std::to_string(i) + " = " + std::to_string(out[i]);
      ok = false;
    }
  const char* callsEnv = getenv("SCALE_ALLTOALL_CALLS");
  const int calls = std::min(Peak::kMaxCalls, std::max(1, callsEnv ? atoi(callsEnv) : 1));
  std::vector<float> a2aIn(static_cast<size_t>(nranks)), a2aOut(static_cast<size_t>(nranks));
  for (int call = 0; ok && call < calls; ++call) {
    // Block j of rank r carries call * 1e6 + r * 1000 + j (exact in a float up to 16 calls of 1024 ranks).
    for (int j = 0; j < nranks; ++j) a2aIn[j] = static_cast<float>(call * 1000000 + rank * 1000 + j);
    std::fill(a2aOut.begin(), a2aOut.end(), -1.f);
    ok = weftAlltoAll(a2aIn.data(), a2aOut.data(), 1, weftFloat32, comm, nullptr) == weftSuccess;
    raiseTo(&peak->allToAllMs[call], msSince(&t));
    raiseTo(&peak->calls, call + 1);
    for (int j = 0; ok && j < nranks; ++j)
      if (a2aOut[j] != static_cast<float>(call * 1000000 + j * 1000 + rank)) {
        *why = "AllToAll " + std::to_string(call) + " block " + std::to_string(j) + " = " + std::to_string(a2aOut[j]);
        ok = false;
      }
    peak->sample();
  }
  if (!ok && why->empty()) *why = std::string("collective: ") + weftGetLastError(comm);
  peak->sample();
  if (rank == 0 && getenv("SCALE_DUMP_FDS")) {
    std::string cmd = "ls -l /proc/" + std::to_string(getpid()) + "/fd | awk '{print $NF}' | sed 's/[0-9]*//g' | sort | uniq -c";
    if (system(cmd.c_str()) != 0) fprintf(stderr, "could not list descriptors\n");
  }
  weftCommDestroy(comm);
  return ok;
}

int runProcess(int proc, int threads, int nranks, size_t count) {
  Peak peak;
  std::vector<std::thread> ranks;
  std::vector<std::string> why(threads);
  std::atomic<int> failed{0};
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    ranks.emplace_back([&, t] {
      if (!runRank(proc * threads + t, nranks, count, &peak, &why[t])) {
        failed++;
        // Now, not after the join: the other ranks may wait for this one
        // until WEFT_TIMEOUT_MS, and a test cut off before then said nothing.
        fprintf(stderr, "rank %d: %s\n", proc * threads + t, why[t].c_str());
      }
    });
  for (auto& r : ranks) r.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string calls;
  for (int c = 0; c < peak.calls.load(); ++c)
    calls += (c ? " " : "") + std::to_string(peak.allToAllMs[c].load() / 1e3).substr(0, 5);
  printf("process %d: %d ranks, peak %d descriptors, %ld threads, VmRSS %ld MiB, %.1f s (slowest rank: init %.1f s, "
         "AllReduce %.1f s, AllToAll %s s), %s\n",
         proc, threads, peak.fds.load(), peak.threads.load(), peak.rssKb.load() / 1024, s, peak.initMs.load() / 1e3,
         peak.allReduceMs.load() / 1e3, calls.c_str(), failed ? "FAILED" : "ok");
  fflush(stdout);
  return failed ? 1 : 0;
}

// A loopback port for the bootstrap root that rank 0 can still bind when it
// gets there. It must lie below the kernel's ephemeral range: the other
// ranks' listeners and their connections to the root take ephemeral ports
// while rank 0 is still starting, and one of them holding the root's port
// made rank 0's bind fail (EADDRINUSE) while the 31 others waited for a root
// that never came (WEFT_TIMEOUT_MS). Below the range only an explicit bind
// can take a port, and the probe here sees those.
int rootPort() {
  int low = 32768;
  if (FILE* f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (fscanf(f, "%d", &low) != 1) low = 32768;
    fclose(f);
  }
  const int first = 10000, span = low - first;
  if (span <= 0) return -1;
  for (int i = 0; i < 64; ++i) {
    const int port = first + static_cast<int>((getpid() + i * 7919) % span);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as the root binds
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (free) return port;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <processes> <threads per process> [count] [deadline s]\n", argv[0]);
    return 2;
  }
  const int procs = atoi(argv[1]), threads = atoi(argv[2]);
  const size_t count = argc > 3 ? strtoull(argv[3], nullptr, 10) : 1024;
  if (procs < 1 || threads < 1) return 2;
  if (!getenv("WEFT_COMM_ID")) {
    const int port = rootPort();
    if (port < 0) {
      fprintf(stderr, "no free loopback port below the ephemeral range for the bootstrap root\n");
      return 1;
    }
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    setenv("WEFT_COMM_ID", addr, 1);
  }
  setenv("WEFT_COMM_SECRET", "scale-test", 0);
  setenv("WEFT_SOCKET_IFNAME", "lo", 0);
  const int deadlineS = argc > 4 ? atoi(argv[4]) : 300;
  std::vector<pid_t> pids;
  for (int p = 0; p < procs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a killed parent
      _exit(runProcess(p, threads, procs * threads, count));
    }
    pids.push_back(pid);
  }
  // Waits for every child, up to the deadline; then kills the rest.
  int bad = 0, left = procs;
  const auto t0 = std::chrono::steady_clock::now();
  while (left > 0) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      --left;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
      continue;
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(deadlineS)) {
      fprintf(stderr, "%d processes still running after %d s: killed\n", left, deadlineS);
      for (pid_t c : pids) kill(c, SIGKILL);
      while (waitpid(-1, &st, 0) > 0) {}
      bad += left;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  printf("%d ranks in %d processes: %s\n", procs * threads, procs, bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}
