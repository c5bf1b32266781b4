// "Who has not arrived" with real ranks: one rank stays out of an
// AllReduce. The others' timeout errors name it; before the timeout,
// weftCommDiagnose from another thread and WEFT_DIAGNOSE_SIGNAL report it
// while the ranks are blocked inside the call, and the call still completes
// once the missing rank arrives.
#include <signal.h>
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "src/core/comm.h"
#include "src/core/diagnose.h"
#include "tests/process/process_ranks.h"

namespace weft::test {
namespace {

constexpr size_t kCount = 4096;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

ChildEnv baseEnv(const char* timeoutMs) {
  ChildEnv e;
  e.vars["WEFT_BUFFSIZE"] = "65536";
  e.vars["WEFT_TIMEOUT_MS"] = timeoutMs;
  e.vars["WEFT_SOCKET_IFNAME"] = "lo";
  e.vars["WEFT_HOSTID"] = "";
  e.vars["WEFT_SHM_DISABLE"] = "";
  return e;
}

// Waits (bounded) until pred() holds.
template <class P>
bool waitUntil(P pred, int64_t ms) {
  const int64_t end = nowMs() + ms;
  while (!pred()) {
    if (nowMs() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

weftResult_t allReduce(weftComm_t comm, int rank) {
  std::vector<float> send(kCount, float(rank)), recv(kCount);
  return weftAllReduce(send.data(), recv.data(), kCount, weftFloat32, weftSum, comm, nullptr);
}

template <class T>
T* sharedPage() {
  void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : new (p) T();
}

// Threads as ranks: rank 2 of 3 holds back; weftCommDiagnose on rank 0's
// communicator, from the test's main thread, names it. Then bad input.
TEST(Diagnose, ApiNamesTheMissingThreadRankAndRejectsBadBuffers) {
  setenv("WEFT_TIMEOUT_MS", "30000", 1);
  constexpr int n = 3;
  weftComm_t comms[n];
  ASSERT_EQ(weftCommInitAll(comms, n, nullptr), weftSuccess) << weftGetLastError(nullptr);
  std::vector<weftResult_t> rc(n, weftInternalError);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; r++) ranks.emplace_back([&, r] { rc[r] = allReduce(comms[r], r); });
  const bool inside = waitUntil(
      [&] {
        for (int r = 0; r < 2; r++)
          if (comms[r]->callState.snapshot().phase != int32_t(CallPhase::Running)) return false;
        return true;
      },
      10000);
  std::string report(8192, '\0');
  const int64_t askedAt = nowMs();
  weftResult_t drc = weftCommDiagnose(comms[0], report.data(), report.size());
  const int64_t tookMs = nowMs() - askedAt;
  report.resize(strlen(report.c_str()));
  char small[16];
  memset(small, 'x', sizeof(small));
  weftResult_t smallRc = weftCommDiagnose(comms[0], small, sizeof(small));
  weftResult_t nullRc = weftCommDiagnose(comms[0], nullptr, 100);
  weftResult_t zeroRc = weftCommDiagnose(comms[0], small, 0);
  ranks.emplace_back([&] { rc[2] = allReduce(comms[2], 2); });  // the late rank arrives
  for (auto& t : ranks) t.join();

  EXPECT_TRUE(inside) << "ranks 0 and 1 never showed as inside the AllReduce";
  EXPECT_EQ(drc, weftSuccess);
  fprintf(stderr, "weftCommDiagnose over 3 thread ranks took %ld ms\n", long(tookMs));
  EXPECT_LT(tookMs, kDiagnoseWaitMs) << "every rank answers: the gather must not wait for its bound";
  EXPECT_TRUE(has(report, "rank 2: HAS NOT ENTERED #1 AllReduce")) << report;
  EXPECT_TRUE(has(report, "rank 2 not entered")) << report;
  EXPECT_TRUE(has(report, "rank 0: in #1 AllReduce")) << report;
  EXPECT_EQ(smallRc, weftSuccess);
  EXPECT_EQ(small[15], '\0');
  EXPECT_EQ(std::string(small), "diagnosis of...");
  EXPECT_EQ(nullRc, weftInvalidArgument);
  EXPECT_EQ(zeroRc, weftInvalidArgument);
  EXPECT_EQ(weftCommDiagnose(nullptr, small, sizeof(small)), weftInvalidArgument);
  for (int r = 0; r < n; r++) EXPECT_EQ(rc[r], weftSuccess) << "rank " << r;
  for (int r = 0; r < n; r++) EXPECT_EQ(weftCommDestroy(comms[r]), weftSuccess);
  unsetenv("WEFT_TIMEOUT_MS");
}

// Four processes; rank 2 never calls the second AllReduce. With a 3 s
// timeout, the others fail within the timeout plus the bounded gather, and
// their errors (and rank 0's WARN report) name rank 2.
TEST(Diagnose, TimeoutErrorsNameTheRankThatNeverCalled) {
  constexpr int n = 4;
  constexpr int64_t timeoutMs = 3000;
  enum { kOk = 0, kInit = 2, kFirstCall = 3, kNotTimeout = 10, kNotNamed = 11, kTooSlow = 12 };
  struct Shared {
    std::atomic<int> failed{0};
  };
  Shared* shared = sharedPage<Shared>();
  ASSERT_NE(shared, nullptr);
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) { return baseEnv("3000"); };
  const long logStart = logFileEnd();
  ProcessRunResult r = runRankProcesses(
      n,
      [shared](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (weftCommInitRank(&comm, n, id, rank) != weftSuccess) return int(kInit);
        if (allReduce(comm, rank) != weftSuccess) return int(kFirstCall);
        if (rank == 2) {  // stays away from the second AllReduce
          waitUntil([&] { return shared->failed.load() == n - 1; }, 20000);
          weftCommDestroy(comm);
          return int(kOk);
        }
        const int64_t start = nowMs();
        const weftResult_t rc = allReduce(comm, rank);
        const int64_t took = nowMs() - start;
        const std::string commError = weftGetLastError(comm), threadError = weftGetLastError(nullptr);
        fprintf(stderr, "rank %d: %s after %ld ms: %s\n", rank, weftGetErrorString(rc), long(took), commError.c_str());
        int code = kOk;
        if (rc != weftTimeout) code = kNotTimeout;
        else if (!has(commError, "rank 2 not entered") || !has(threadError, "rank 2 not entered")) code = kNotNamed;
        else if (took > timeoutMs + 3000) code = kTooSlow;
        // Everyone stays reachable until all have their verdict.
        shared->failed.fetch_add(1);
        waitUntil([&] { return shared->failed.load() == n - 1; }, 20000);
        weftCommAbort(comm);
        return code;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
  const std::string log = logTextSince(logStart);
  EXPECT_TRUE(has(log, "rank 2: HAS NOT ENTERED #2 AllReduce")) << log;
  EXPECT_TRUE(has(log, "after a timeout on rank 0")) << log;  // the report of the lowest rank inside
  munmap(shared, sizeof(Shared));
}

// A rank that cannot answer (stopped: its bootstrap threads too) is
// reported as not answering, and the gather's bound keeps the others' errors
// within the timeout plus about 2 s.
TEST(Diagnose, AStoppedRankIsReportedAsNotAnswering) {
  constexpr int n = 4;
  constexpr int64_t timeoutMs = 3000;
  enum { kOk = 0, kInit = 2, kFirstCall = 3, kNotTimeout = 10, kNotNamed = 11, kTooSlow = 12 };
  struct Shared {
    std::atomic<int> failed{0};
  };
  Shared* shared = sharedPage<Shared>();
  ASSERT_NE(shared, nullptr);
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) { return baseEnv("3000"); };
  // The stopped rank is killed once the others have their errors.
  opt.whileRunning = [shared](const std::vector<pid_t>& pids) {
    waitUntil([&] { return shared->failed.load() == n - 1; }, 30000);
    kill(pids[2], SIGKILL);
  };
  ProcessRunResult r = runRankProcesses(
      n,
      [shared](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (weftCommInitRank(&comm, n, id, rank) != weftSuccess) return int(kInit);
        if (allReduce(comm, rank) != weftSuccess) return int(kFirstCall);
        if (rank == 2) raise(SIGSTOP);
        const int64_t start = nowMs();
        const weftResult_t rc = allReduce(comm, rank);
        const int64_t took = nowMs() - start;
        const std::string error = weftGetLastError(comm);
        int code = kOk;
        if (rc != weftTimeout) code = kNotTimeout;
        else if (!has(error, "rank 2 not answering (dead or unreachable)")) code = kNotNamed;
        else if (took > timeoutMs + kDiagnoseWaitMs + 2000) code = kTooSlow;
        fprintf(stderr, "rank %d: %s after %ld ms: %s\n", rank, weftGetErrorString(rc), long(took), error.c_str());
        shared->failed.fetch_add(1);
        waitUntil([&] { return shared->failed.load() == n - 1; }, 20000);
        weftCommAbort(comm);
        return code;
      },
      opt);
  EXPECT_EQ(r.failures({2}), "");
  munmap(shared, sizeof(Shared));
}

// Four processes, a long timeout; rank 2 holds back. While ranks 0, 1 and 3
// are blocked in the AllReduce, rank 0 calls weftCommDiagnose from another
// thread and then rank 3 gets SIGUSR1 (WEFT_DIAGNOSE_SIGNAL=USR1): both
// reports name rank 2, and the signal's is printed by rank 0. Then rank 2
// arrives and the AllReduce completes everywhere.
TEST(Diagnose, ApiAndSignalBeforeTheTimeoutNameTheMissingProcess) {
  constexpr int n = 4;
  enum { kOk = 0, kInit = 2, kFirstCall = 3, kSecondCall = 4, kApiReport = 10 };
  struct Shared {
    std::atomic<int> inCall{0};
    std::atomic<int> apiChecked{0};  // 1 named rank 2, 2 did not
    std::atomic<int> signalSeen{0};  // 1 the signal's report named rank 2, 2 not
  };
  Shared* shared = sharedPage<Shared>();
  ASSERT_NE(shared, nullptr);
  ProcessRunOptions opt;
  opt.deadlineMs = 50000;
  opt.env = [](int) {
    ChildEnv e = baseEnv("30000");
    e.vars["WEFT_DIAGNOSE_SIGNAL"] = "USR1";
    return e;
  };
  const long logStart = logFileEnd();
  opt.whileRunning = [shared, logStart](const std::vector<pid_t>& pids) {
    if (!waitUntil([&] { return shared->apiChecked.load() != 0; }, 30000) || shared->apiChecked.load() != 1) {
      shared->signalSeen.store(2);
      return;
    }
    kill(pids[3], SIGUSR1);
    const bool seen = waitUntil(
        [&] {
          const std::string log = logTextSince(logStart);
          const size_t at = log.find("by rank 0, on signal " + std::to_string(SIGUSR1) + " (WEFT_DIAGNOSE_SIGNAL) to rank 3");
          return at != std::string::npos && log.find("rank 2: HAS NOT ENTERED #2 AllReduce", at) != std::string::npos &&
                 has(log, "is printed by rank 0, the lowest rank that answers");
        },
        10000);
    shared->signalSeen.store(seen ? 1 : 2);
  };
  ProcessRunResult r = runRankProcesses(
      n,
      [shared](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (weftCommInitRank(&comm, n, id, rank) != weftSuccess) return int(kInit);
        if (allReduce(comm, rank) != weftSuccess) return int(kFirstCall);
        std::string report(8192, '\0');
        std::thread asker;
        if (rank == 0)
          asker = std::thread([&] {
            waitUntil([&] { return shared->inCall.load() == n - 1; }, 20000);
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            const bool ok = weftCommDiagnose(comm, report.data(), report.size()) == weftSuccess &&
                            has(report, "rank 2: HAS NOT ENTERED #2 AllReduce") && has(report, "rank 2 not entered");
            shared->apiChecked.store(ok ? 1 : 2);
          });
        if (rank == 2) waitUntil([&] { return shared->signalSeen.load() != 0; }, 40000);
        else shared->inCall.fetch_add(1);
        const weftResult_t rc = allReduce(comm, rank);
        if (asker.joinable()) asker.join();
        if (rank == 0 && shared->apiChecked.load() != 1) {
          fprintf(stderr, "rank 0: weftCommDiagnose's report does not name rank 2:\n%s\n", report.c_str());
          return int(kApiReport);
        }
        if (rc != weftSuccess) {
          fprintf(stderr, "rank %d: AllReduce: %s: %s\n", rank, weftGetErrorString(rc), weftGetLastError(comm));
          return int(kSecondCall);
        }
        return weftCommDestroy(comm) == weftSuccess ? int(kOk) : 5;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
  EXPECT_EQ(shared->signalSeen.load(), 1) << logTextSince(logStart);
  munmap(shared, sizeof(Shared));
}

// Four processes; rank 1 calls an AllGather where the others call their
// second AllReduce. Every rank's timeout error names the mismatch: rank 1
// and both collectives.
TEST(Diagnose, AMismatchedCollectiveIsNamedWithBothKinds) {
  constexpr int n = 4;
  constexpr int64_t timeoutMs = 3000;
  enum { kOk = 0, kInit = 2, kFirstCall = 3, kSucceeded = 10, kNotNamed = 11, kTooSlow = 12 };
  struct Shared {
    std::atomic<int> failed{0};
  };
  Shared* shared = sharedPage<Shared>();
  ASSERT_NE(shared, nullptr);
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) { return baseEnv("3000"); };
  const long logStart = logFileEnd();
  ProcessRunResult r = runRankProcesses(
      n,
      [shared](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (weftCommInitRank(&comm, n, id, rank) != weftSuccess) return int(kInit);
        if (allReduce(comm, rank) != weftSuccess) return int(kFirstCall);
        const int64_t start = nowMs();
        weftResult_t rc;
        if (rank == 1) {
          std::vector<float> send(kCount, 1.0f), recv(kCount * n);
          rc = weftAllGather(send.data(), recv.data(), kCount, weftFloat32, comm, nullptr);
        } else {
          rc = allReduce(comm, rank);
        }
        const int64_t took = nowMs() - start;
        const std::string error = weftGetLastError(comm);
        fprintf(stderr, "rank %d: %s after %ld ms: %s\n", rank, weftGetErrorString(rc), long(took), error.c_str());
        int code = kOk;
        if (rc == weftSuccess) code = kSucceeded;
        else if (rc == weftTimeout && !has(error, "MISMATCH rank 1 is in #2 AllGather, not AllReduce")) code = kNotNamed;
        else if (took > timeoutMs + kDiagnoseWaitMs + 2000) code = kTooSlow;
        shared->failed.fetch_add(1);
        waitUntil([&] { return shared->failed.load() == n; }, 20000);
        weftCommAbort(comm);
        return code;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
  const std::string log = logTextSince(logStart);
  EXPECT_TRUE(has(log, "rank 1: MISMATCH: in #2 AllGather while rank 0 is in #2 AllReduce")) << log;
  munmap(shared, sizeof(Shared));
}

// Rank 0 is gone (stopped: it answers nothing); rank 3 gets the signal
// while ranks 1-3 wait in an AllReduce. Rank 1, the lowest rank that
// answers, prints the report, and it names rank 0 as not answering.
TEST(Diagnose, SignalWithRankZeroGoneIsPrintedByTheLowestLiveRank) {
  constexpr int n = 4;
  enum { kOk = 0, kInit = 2, kFirstCall = 3 };
  struct Shared {
    std::atomic<int> inCall{0};
  };
  Shared* shared = sharedPage<Shared>();
  ASSERT_NE(shared, nullptr);
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) {
    ChildEnv e = baseEnv("30000");
    e.vars["WEFT_DIAGNOSE_SIGNAL"] = "USR1";
    return e;
  };
  const long logStart = logFileEnd();
  bool seen = false;
  opt.whileRunning = [shared, logStart, &seen](const std::vector<pid_t>& pids) {
    waitUntil([&] { return shared->inCall.load() == n - 1; }, 20000);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(pids[3], SIGUSR1);
    seen = waitUntil(
        [&] {
          const std::string log = logTextSince(logStart);
          const size_t at = log.find("by rank 1, on signal " + std::to_string(SIGUSR1) + " (WEFT_DIAGNOSE_SIGNAL) to rank 3");
          return at != std::string::npos && log.find("rank 0: NOT ANSWERING", at) != std::string::npos;
        },
        15000);
    kill(pids[0], SIGKILL);  // the others' AllReduce now fails: their peer is dead
  };
  ProcessRunResult r = runRankProcesses(
      n,
      [shared](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (weftCommInitRank(&comm, n, id, rank) != weftSuccess) return int(kInit);
        if (allReduce(comm, rank) != weftSuccess) return int(kFirstCall);
        if (rank == 0) raise(SIGSTOP);
        shared->inCall.fetch_add(1);
        allReduce(comm, rank);  // fails once rank 0 is killed
        weftCommAbort(comm);
        return int(kOk);
      },
      opt);
  EXPECT_EQ(r.failures({0}), "");
  EXPECT_TRUE(seen) << logTextSince(logStart);
  munmap(shared, sizeof(Shared));
}

}  // namespace
}  // namespace weft::test
