// One rank of a fault-campaign job (tools/fault-campaign.sh): verified
// AllReduces in a loop. Public API only.
//
//   campaign_rank <count> <iterations> <run limit s> <cleanup bound ms>
//
// Launched with WEFT_RANK, WEFT_NRANKS and WEFT_COMM_ID (every rank derives
// the same unique id; rank 0 runs the bootstrap root). Round i sends, at
// element e, (rank + 1) * (e % 7 + 1) + i % 5 and checks every element of
// the result against the closed form of the sum over ranks (small integers:
// exact in float32), so a piece from the wrong step, peer or round is caught.
// <iterations> 0 loops until a call fails or the run limit passes. With
// CAMPAIGN_STOP_FILE set, every round ends with a one-element AllReduce of
// "rank 0 sees that file": all ranks stop after the same round once it
// exists (a job that lasts as long as the harness needs), and <iterations>
// is only the most rounds.
//
// Lines it prints (the campaign parses them):
//   rank R: looping                      after the first verified round
//   rank R: done N rounds                every round verified (iterations > 0)
//   rank R: failed at <epoch ms> after N rounds: <call>: <result>: <last error>
//   rank R: <cleanup> returned <result> after M ms
// Exit codes:
//   0   <iterations> rounds done, every result right
//   10  a call failed, its cleanup (weftCommAbort) returned within the bound
//   11  a call failed, the cleanup took longer than the bound
//   12  iterations 0 and nothing failed within the run limit; or the run limit
//       passed before <iterations> rounds
//   13  a call returned success with a wrong result
//   2   usage error, or init failed (the error is printed as a failure line
//       with call weftCommInitRank)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include "weft/weft.h"

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t epochMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

float sendValue(int rank, int round, size_t e) { return float((rank + 1) * int(e % 7 + 1) + round % 5); }

float expected(int nranks, int round, size_t e) {
  return float(int(e % 7 + 1) * nranks * (nranks + 1) / 2 + nranks * (round % 5));
}

void reportFailure(int rank, long rounds, const char* call, weftResult_t r, weftComm_t comm) {
  std::fprintf(stderr, "rank %d: failed at %lld after %ld rounds: %s: %s: %s\n", rank,
               static_cast<long long>(epochMs()), rounds, call, weftGetErrorString(r), weftGetLastError(comm));
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <count> <iterations> <run limit s> <cleanup bound ms>\n", argv[0]);
    return 2;
  }
  const size_t count = std::strtoull(argv[1], nullptr, 10);
  const long iterations = std::atol(argv[2]);
  const int64_t runLimitMs = std::atoll(argv[3]) * 1000;
  const int64_t cleanupBoundMs = std::atoll(argv[4]);
  const int rank = envInt("WEFT_RANK"), nranks = envInt("WEFT_NRANKS");
  if (rank < 0 || nranks < 1 || count == 0 || iterations < 0) {
    std::fprintf(stderr, "campaign_rank: set WEFT_RANK and WEFT_NRANKS; count must be positive\n");
    return 2;
  }
  weftUniqueId id;
  weftComm_t comm = nullptr;
  weftStream_t stream;
  weftResult_t r = weftGetUniqueId(&id);
  if (r == weftSuccess) r = weftCommInitRank(&comm, nranks, id, rank);
  if (r != weftSuccess) {
    reportFailure(rank, 0, "weftCommInitRank", r, nullptr);
    return 2;
  }
  if (weftHostStreamCreate(&stream) != weftSuccess) return 2;
  std::vector<float> send(count), recv(count);
  const char* stopFile = std::getenv("CAMPAIGN_STOP_FILE");
  const int64_t start = nowMs();
  long round = 0;
  const char* where = "";
  weftResult_t failed = weftSuccess;
  for (; (iterations == 0 || round < iterations) && nowMs() - start < runLimitMs; round++) {
    for (size_t e = 0; e < count; e++) send[e] = sendValue(rank, int(round), e);
    std::fill(recv.begin(), recv.end(), -1.0f);
    where = "weftAllReduce";
    failed = weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, comm, stream);
    if (failed == weftSuccess) {
      where = "weftHostStreamSynchronize";
      failed = weftHostStreamSynchronize(stream);
    }
    if (failed != weftSuccess) break;
    for (size_t e = 0; e < count; e++) {
      if (recv[e] != expected(nranks, int(round), e)) {
        std::fprintf(stderr, "rank %d: WRONG RESULT round %ld element %zu is %g, want %g, and the call succeeded\n",
                     rank, round, e, recv[e], expected(nranks, int(round), e));
        return 13;
      }
    }
    if (round == 0) {
      std::printf("rank %d: looping\n", rank);
      std::fflush(stdout);
    }
    if (stopFile) {
      int32_t flag = rank == 0 && access(stopFile, F_OK) == 0 ? 1 : 0, any = -1;
      where = "weftAllReduce (stop flag)";
      failed = weftAllReduce(&flag, &any, 1, weftInt32, weftSum, comm, stream);
      if (failed == weftSuccess) failed = weftHostStreamSynchronize(stream);
      if (failed != weftSuccess) break;
      if (any != 0 && any != 1) {
        std::fprintf(stderr, "rank %d: WRONG RESULT stop flag sum %d\n", rank, any);
        return 13;
      }
      if (any == 1) {
        round++;
        std::printf("rank %d: done %ld rounds\n", rank, round);
        weftHostStreamDestroy(stream);
        return weftCommDestroy(comm) == weftSuccess ? 0 : 2;
      }
    }
  }
  if (failed == weftSuccess) {
    if (iterations > 0 && round == iterations) {
      std::printf("rank %d: done %ld rounds\n", rank, round);
      weftHostStreamDestroy(stream);
      return weftCommDestroy(comm) == weftSuccess ? 0 : 2;
    }
    std::fprintf(stderr, "rank %d: nothing failed within %ld s (%ld rounds)\n", rank, long(runLimitMs / 1000), round);
    return 12;
  }
  reportFailure(rank, round, where, failed, comm);
  const int64_t cleanupStart = nowMs();
  weftResult_t c = weftCommAbort(comm);
  weftHostStreamDestroy(stream);
  const int64_t took = nowMs() - cleanupStart;
  std::fprintf(stderr, "rank %d: weftCommAbort returned %s after %ld ms\n", rank, weftGetErrorString(c), long(took));
  return took <= cleanupBoundMs ? 10 : 11;
}
