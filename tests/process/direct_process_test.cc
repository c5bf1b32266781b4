// Single-copy collectives with ranks as processes on one host: buffers from
// weftMemAlloc, registered, which peers map by name (src/core/direct_comm.h).
// AllReduce (in and out of place), ReduceScatter and AllGather against exact
// sums; a rank whose registered buffer is ordinary memory (which another
// process cannot map) sends every rank down the FIFO path, with the same
// results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstdio>
#include <string>

#include "process_ranks.h"
#include "src/core/comm.h"
#include "src/core/direct_comm.h"

namespace weft::test {
namespace {

ChildEnv env(int) {
  ChildEnv e;
  e.vars["WEFT_SOCKET_IFNAME"] = "lo";
  e.vars["WEFT_TIMEOUT_MS"] = "30000";
  e.vars["WEFT_HOSTID"] = "";
  e.vars["WEFT_SHM_DISABLE"] = "";
  return e;
}

float input(int rank, size_t i) { return float(rank + 1 + int(i % 7)); }

float* buffer(size_t elems, bool shared) {
  void* p = nullptr;
  if (shared) weftMemAlloc(&p, elems * 4);
  else p = aligned_alloc(64, (elems * 4 + 63) / 64 * 64);
  return static_cast<float*>(p);
}

// One of each collective on (send, recv) registered on comm; returns the
// number of failures (printed).
int runCalls(weftComm_t comm, int rank, int n, size_t count, bool shared) {
  int bad = 0;
  float* send = buffer(count * n, shared);
  float* recv = buffer(count * n, shared);
  void *hs = nullptr, *hr = nullptr;
  if (weftCommRegister(comm, send, count * n * 4, &hs) || weftCommRegister(comm, recv, count * n * 4, &hr)) return 1;
  auto fill = [&](size_t elems) {
    for (size_t i = 0; i < elems; i++) send[i] = input(rank, i);
  };
  auto expect = [&](const char* what, size_t elems, auto want) {
    for (size_t i = 0; i < elems; i++)
      if (recv[i] != want(i)) {
        fprintf(stderr, "rank %d %s [%zu] = %g, want %g\n", rank, what, i, recv[i], want(i));
        bad++;
        return;
      }
  };
  const float tri = float(n * (n + 1) / 2);
  fill(count);
  if (weftAllReduce(send, recv, count, weftFloat32, weftSum, comm, nullptr)) bad++;
  expect("allreduce", count, [&](size_t i) { return tri + float(n * int(i % 7)); });
  fill(count);
  if (weftAllReduce(send, send, count, weftFloat32, weftSum, comm, nullptr)) bad++;
  for (size_t i = 0; i < count; i++) recv[i] = send[i];
  expect("in-place allreduce", count, [&](size_t i) { return tri + float(n * int(i % 7)); });
  fill(count * n);
  if (weftReduceScatter(send, recv, count, weftFloat32, weftSum, comm, nullptr)) bad++;
  expect("reducescatter", count, [&](size_t i) { return tri + float(n * int((rank * count + i) % 7)); });
  fill(count);
  if (weftAllGather(send, recv, count, weftFloat32, comm, nullptr)) bad++;
  expect("allgather", count * n, [&](size_t i) { return input(int(i / count), i % count); });
  weftCommDeregister(comm, hs);
  weftCommDeregister(comm, hr);
  if (shared) {
    weftMemFree(send);
    weftMemFree(recv);
  } else {
    free(send);
    free(recv);
  }
  return bad;
}

// Every rank shares (weftMemAlloc) unless it is `plainRank`; wantDirect:
// the number of single-copy calls each rank must see.
void run(int n, int plainRank, uint64_t wantDirect) {
  const size_t count = 300001;  // 1.2 MB: past WEFT_DIRECT_MIN_BYTES and ll
  ProcessRunOptions opts;
  opts.env = env;
  ProcessRunResult res = runRankProcesses(
      n,
      [&](int rank, const weftUniqueId& id) {
        weftComm_t comm = nullptr;
        if (int rc = initOrReport(&comm, n, id, rank)) return rc;
        int bad = runCalls(comm, rank, n, count, rank != plainRank);
        const uint64_t direct = comm->direct ? comm->direct->callsRun : 0;
        if (direct != wantDirect) {
          fprintf(stderr, "rank %d: %lu single-copy calls, want %lu\n", rank, (unsigned long)direct,
                  (unsigned long)wantDirect);
          bad++;
        }
        weftCommDestroy(comm);
        return bad ? 1 : 0;
      },
      opts);
  EXPECT_EQ(res.failures(), "");
}

TEST(DirectProcesses, TwoRanksSingleCopy) { run(2, -1, 4); }
TEST(DirectProcesses, ThreeRanksSingleCopy) { run(3, -1, 4); }
TEST(DirectProcesses, OrdinaryMemoryOnOneRankFallsBackForAll) { run(3, 1, 0); }

}  // namespace
}  // namespace weft::test
