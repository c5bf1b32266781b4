// One rank of a job that runs AllReduce in a loop until something fails,
// then cleans up as an application would, for tests/multihost/host_death.sh.
// Public API only.
//
//   fault_rank <count> <batch> destroy|abort <cleanup bound ms> <run limit s>
//
// Launched with WEFT_RANK, WEFT_NRANKS and WEFT_COMM_ID (see netns_hosts.sh).
// Each round queues <batch> AllReduces of <count> floats (all ones) on a host
// stream and synchronizes; every result is checked (each element must equal
// nranks). Prints "rank R: looping" after the first good round. After the
// first failure it prints the error, calls weftCommDestroy or weftCommAbort
// and says how long that took. Exit codes:
//   10  a call failed, cleanup returned within the bound   (the expected end)
//   11  a call failed, cleanup took longer than the bound  (a hang in cleanup)
//   12  nothing failed within the run limit
//   13  a call returned success with a wrong result
//   2   usage or init error
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "weft/weft.h"

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 || (std::strcmp(argv[3], "destroy") != 0 && std::strcmp(argv[3], "abort") != 0)) {
    std::fprintf(stderr, "usage: %s <count> <batch> destroy|abort <cleanup bound ms> <run limit s>\n", argv[0]);
    return 2;
  }
  const size_t count = std::strtoull(argv[1], nullptr, 10);
  const int batch = std::atoi(argv[2]);
  const bool destroy = std::strcmp(argv[3], "destroy") == 0;
  const int64_t cleanupBoundMs = std::atoll(argv[4]);
  const int64_t runLimitMs = std::atoll(argv[5]) * 1000;
  const int rank = envInt("WEFT_RANK"), nranks = envInt("WEFT_NRANKS");
  if (rank < 0 || nranks < 1 || count == 0 || batch < 1) {
    std::fprintf(stderr, "fault_rank: set WEFT_RANK and WEFT_NRANKS; count and batch must be positive\n");
    return 2;
  }
  weftUniqueId id;
  weftComm_t comm;
  weftStream_t stream;
  if (weftGetUniqueId(&id) != weftSuccess || weftCommInitRank(&comm, nranks, id, rank) != weftSuccess ||
      weftHostStreamCreate(&stream) != weftSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", rank, weftGetLastError(nullptr));
    return 2;
  }
  std::vector<float> send(count, 1.0f);
  std::vector<std::vector<float>> recv(batch, std::vector<float>(count));
  const int64_t start = nowMs();
  weftResult_t failed = weftSuccess;
  const char* where = "";
  for (int round = 0; nowMs() - start < runLimitMs; round++) {
    for (auto& r : recv) std::fill(r.begin(), r.end(), -1.0f);
    for (int i = 0; i < batch && failed == weftSuccess; i++) {
      failed = weftAllReduce(send.data(), recv[i].data(), count, weftFloat32, weftSum, comm, stream);
      where = "weftAllReduce";
    }
    if (failed == weftSuccess) {
      failed = weftHostStreamSynchronize(stream);
      where = "weftHostStreamSynchronize";
    }
    if (failed != weftSuccess) break;
    for (int i = 0; i < batch; i++) {
      for (size_t e = 0; e < count; e++) {
        if (recv[i][e] != float(nranks)) {
          std::fprintf(stderr, "rank %d: round %d op %d element %zu is %g, want %d, and the call succeeded\n", rank,
                       round, i, e, recv[i][e], nranks);
          return 13;
        }
      }
    }
    if (round == 0) {
      std::printf("rank %d: looping\n", rank);
      std::fflush(stdout);
    }
  }
  if (failed == weftSuccess) {
    std::fprintf(stderr, "rank %d: nothing failed within %ld s\n", rank, long(runLimitMs / 1000));
    return 12;
  }
  weftResult_t async = weftSuccess;
  weftCommGetAsyncError(comm, &async);
  std::fprintf(stderr, "rank %d: %s failed: %s: %s (async error: %s)\n", rank, where, weftGetErrorString(failed),
               weftGetLastError(comm), weftGetErrorString(async));
  const int64_t cleanupStart = nowMs();
  weftResult_t c = destroy ? weftCommDestroy(comm) : weftCommAbort(comm);
  weftHostStreamDestroy(stream);
  const int64_t took = nowMs() - cleanupStart;
  std::fprintf(stderr, "rank %d: %s returned %s after %ld ms\n", rank, destroy ? "weftCommDestroy" : "weftCommAbort",
               weftGetErrorString(c), long(took));
  return took <= cleanupBoundMs ? 10 : 11;
}
