// A rank's connections on one HCA share one completion queue, polled by
// the rank's progress thread and routed by QP number (shared_cq.h). Here:
// a failed completion in the shared queue fails only the connection whose
// QP it names, and a queue past the HCA's limit is refused clearly. Ranks
// as processes, so that each one's provider faults are its own.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ibloop_env.h"
#include "tests/process/process_ranks.h"

namespace weft::test {
namespace {

IbloopProcessEnv ibloopEnv;

constexpr int kOk = 0, kInitFailed = 2, kWrongResult = 11, kFaultyCommSucceeded = 12, kFaultyCommWrong = 13;
constexpr size_t kCount = 20011;  // many 8 KiB slots per call

// n calls of AllReduce on comm, every result checked. Returns kOk, the
// first failure's weftResult_t through *rc, or kWrongResult.
int allReduces(weftComm_t comm, int rank, int nranks, int calls, uint32_t salt, weftResult_t* rc) {
  std::vector<float> send(kCount), recv(kCount);
  for (int it = 0; it < calls; ++it) {
    for (size_t i = 0; i < kCount; ++i) send[i] = float((i * 7 + size_t(it) * 13 + salt + size_t(rank)) % 1024);
    *rc = weftAllReduce(send.data(), recv.data(), kCount, weftFloat32, weftSum, comm, nullptr);
    if (*rc != weftSuccess) {
      fprintf(stderr, "rank %d: AllReduce %d (salt %u): %s: %s\n", rank, it, salt, weftGetErrorString(*rc),
              weftGetLastError(comm));
      return kOk;
    }
    for (size_t i = 0; i < kCount; ++i) {
      float want = 0;
      for (int r = 0; r < nranks; ++r) want += float((i * 7 + size_t(it) * 13 + salt + size_t(r)) % 1024);
      if (recv[i] != want) {
        fprintf(stderr, "rank %d: AllReduce %d (salt %u): element %zu is %g, expected %g\n", rank, it, salt, i,
                recv[i], want);
        return kWrongResult;
      }
    }
  }
  return kOk;
}

// Two communicators over the same ranks (the second split from the first):
// on each rank their connections share the rank's completion queue. Both
// run at once; rank 0's first QP (the first communicator's) completes with
// an error: the first communicator fails, the second finishes every call
// with right results.
int twoCommunicators(int rank, int n, const weftUniqueId& id) {
  weftComm_t faulty = nullptr, healthy = nullptr;
  if (initOrReport(&faulty, n, id, rank) != 0) return kInitFailed;
  weftResult_t rc = weftSuccess;
  // One call each connects both before they run side by side (QP 1 is the
  // faulty one's; the fault comes later).
  if (allReduces(faulty, rank, n, 1, 1, &rc) != kOk || rc != weftSuccess) return kFaultyCommWrong;
  if (weftCommSplit(faulty, 0, rank, &healthy, nullptr) != weftSuccess) return kInitFailed;
  if (allReduces(healthy, rank, n, 1, 2, &rc) != kOk || rc != weftSuccess) return kWrongResult;
  int healthyCode = kOk;
  weftResult_t healthyRc = weftSuccess;
  std::thread other([&] { healthyCode = allReduces(healthy, rank, n, 40, 3, &healthyRc); });
  weftResult_t faultyRc = weftSuccess;
  const int faultyCode = allReduces(faulty, rank, n, 400, 4, &faultyRc);
  other.join();
  if (healthyCode != kOk || healthyRc != weftSuccess) return kWrongResult;
  weftCommDestroy(healthy);
  weftCommAbort(faulty);
  if (faultyCode != kOk) return kFaultyCommWrong;
  return faultyRc == weftSuccess ? kFaultyCommSucceeded : kOk;
}

ProcessRunOptions options(const std::function<std::map<std::string, std::string>(int)>& rankEnv) {
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;  // far past every bound below: reaching it is a hang
  opt.env = [rankEnv](int rank) {
    ChildEnv e;
    e.vars["WEFT_BUFFSIZE"] = "65536";
    e.vars["WEFT_TIMEOUT_MS"] = "8000";
    e.vars["LOOPBACK_VERBS_DEVICES"] = "lbv0:1:IB";
    e.vars["LOOPBACK_VERBS_FAULTS"] = "";
    e.vars["WEFT_IB_QPS_PER_CONNECTION"] = "2";
    for (auto& [k, v] : rankEnv(rank)) e.vars[k] = v;
    return e;
  };
  return opt;
}

TEST(IbloopSharedCq, ErrorCompletionFailsOnlyItsConnection) {
  const long logStart = logFileEnd();
  ProcessRunResult r = runRankProcesses(
      2, [](int rank, const weftUniqueId& id) { return twoCommunicators(rank, 2, id); },
      options([](int rank) -> std::map<std::string, std::string> {
        if (rank != 0) return {};
        return {{"LOOPBACK_VERBS_FAULTS", "wc_qp=1,wc_status=access,wc_after=30"}};
      }));
  EXPECT_EQ(r.failures(), "");
  EXPECT_LT(r.elapsedMs, 30000);
  const std::string log = logTextSince(logStart);
  // Named: the device, the direction and the peer, the status.
  EXPECT_NE(log.find("work completion error on lbv0:1 to rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("remote access error (status 10"), std::string::npos) << log;
}

// 32 slots on 4 QPs need 304 entries per connection end; the HCA here
// allows 200 per queue.
TEST(IbloopSharedCq, QueuePastTheHcaLimitIsRefusedClearly) {
  const long logStart = logFileEnd();
  ProcessRunResult r = runRankProcesses(
      2,
      [](int rank, const weftUniqueId& id) {
        weftComm_t comm = nullptr;
        if (initOrReport(&comm, 2, id, rank) != 0) return kInitFailed;
        weftResult_t rc = weftSuccess;
        int code = allReduces(comm, rank, 2, 1, 0, &rc);
        weftCommAbort(comm);
        return code != kOk ? code : rc == weftSuccess ? kOk : kInitFailed;
      },
      options([](int) -> std::map<std::string, std::string> {
        return {{"LOOPBACK_VERBS_FAULTS", "max_cqe=200"}, {"WEFT_NSLOTS", "32"}, {"WEFT_IB_QPS_PER_CONNECTION", "4"}};
      }));
  EXPECT_FALSE(r.timedOut);
  for (size_t rank = 0; rank < r.children.size(); ++rank) {
    ASSERT_FALSE(r.children[rank].signaled) << rank;
    EXPECT_EQ(r.children[rank].exitCode, kInitFailed) << rank;
  }
  const std::string log = logTextSince(logStart);
  EXPECT_NE(log.find("more than the HCA's limit of 200 (max_cqe)"), std::string::npos) << log;
  EXPECT_NE(log.find("lower WEFT_NSLOTS"), std::string::npos) << log;
}

}  // namespace
}  // namespace weft::test
