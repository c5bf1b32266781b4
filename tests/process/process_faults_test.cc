// Processes as ranks under stress and faults: many small calls, a rank killed
// mid-collective, stray TCP clients at the bootstrap root, and weftCommAbort
// ending a collective that can never complete.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "process_ranks.h"
#include "src/bootstrap/handshake.h"
#include "src/bootstrap/wire.h"
#include "src/core/comm.h"
#include "tests/collectives/collective_check.h"
#include "tests/collectives/thread_ranks.h"

namespace weft::test {
namespace {

ChildEnv baseEnv(const char* timeoutMs) {
  ChildEnv e;
  e.vars["WEFT_BUFFSIZE"] = "65536";
  e.vars["WEFT_TIMEOUT_MS"] = timeoutMs;
  e.vars["WEFT_SOCKET_IFNAME"] = "lo";
  e.vars["WEFT_HOSTID"] = "";
  e.vars["WEFT_SHM_DISABLE"] = "";
  return e;
}

// (c) Eight processes on two cores: 200 tiny AllReduces must not starve.
// The bound is generous; it catches sleeps of milliseconds per step (or a
// lost wake-up rescued only by a timeout), not a slow machine.
TEST(ProcessFaults, EightProcessesTinyAllReducesDoNotStarve) {
  constexpr int n = 8, iterations = 200;
  constexpr int64_t boundMs = 20000;
  ProcessRunOptions opt;
  opt.deadlineMs = 60000;
  opt.env = [](int) { return baseEnv("30000"); };
  ProcessRunResult r = runRankProcesses(
      n,
      [](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        const int64_t start = nowMs();
        for (int it = 0; it < iterations; it++) {
          float v[2] = {float(rank + it), 1.0f};
          float out[2] = {-1, -1};
          weftResult_t rc = weftAllReduce(v, out, 2, weftFloat32, weftSum, comm, nullptr);
          const float want = float(n * it + n * (n - 1) / 2);
          if (rc != weftSuccess || out[0] != want || out[1] != float(n)) {
            fprintf(stderr, "rank %d iteration %d: rc %s, got {%g, %g}, want {%g, %d}\n", rank, it,
                    weftGetErrorString(rc), out[0], out[1], want, n);
            return 1;
          }
        }
        const int64_t took = nowMs() - start;
        if (rank == 0) fprintf(stderr, "%d x 8-byte AllReduce on %d processes: %ld ms\n", iterations, n, long(took));
        if (took > boundMs) {
          fprintf(stderr, "rank %d: %d AllReduces took %ld ms (bound %ld)\n", rank, iterations, long(took),
                  long(boundMs));
          return 5;
        }
        return weftCommDestroy(comm) == weftSuccess ? 0 : 4;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
}

// (d) A rank is SIGKILLed while the others are inside a 16 MB AllReduce: the
// survivors must get an error (not success, not a hang) well within the
// bound, and the communicator must carry it as its async error.
// Over shared memory, and over sockets (a host id per rank).
class KilledRank : public ::testing::TestWithParam<bool> {};

TEST_P(KilledRank, SurvivorsFailNotHang) {
  const bool overSockets = GetParam();
  constexpr int n = 3;
  constexpr size_t count = 4 << 20;  // 16 MB of float32
  constexpr int64_t timeoutMs = 5000;
  // Exit codes of a survivor.
  enum { kOk = 0, kNeverFailed = 10, kNoAsyncError = 11, kTooSlow = 12 };
  ProcessRunOptions opt;
  opt.deadlineMs = 30000;
  opt.env = [overSockets](int rank) {
    ChildEnv e = baseEnv("5000");
    if (overSockets) e.vars["WEFT_HOSTID"] = "host" + std::to_string(rank);
    return e;
  };
  // Ranks count themselves here (shared across fork) once their first
  // AllReduce is done: the kill must hit a running collective loop, not an
  // init that a loaded machine has made slow.
  auto* running = static_cast<std::atomic<int>*>(
      mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(running, MAP_FAILED);
  new (running) std::atomic<int>(0);
  opt.whileRunning = [running](const std::vector<pid_t>& pids) {
    const int64_t start = nowMs();
    while (running->load() < n && nowMs() - start < 20000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pids[1], SIGKILL);
  };
  ProcessRunResult r = runRankProcesses(
      n,
      [running](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        std::vector<float> send(count, 1.0f), recv(count);
        const int64_t start = nowMs();
        bool counted = false;
        // The kill comes ~100 ms after every rank ran a call; give up on
        // seeing it after 20 s.
        while (nowMs() - start < 20000) {
          const int64_t callStart = nowMs();
          weftResult_t rc = weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, comm, nullptr);
          if (rc == weftSuccess) {
            if (!counted) running->fetch_add(1);
            counted = true;
            continue;
          }
          const int64_t callMs = nowMs() - callStart;
          weftResult_t async = weftSuccess;
          weftResult_t q = weftCommGetAsyncError(comm, &async);
          fprintf(stderr, "rank %d: AllReduce returned %s after %ld ms; async error %s\n", rank,
                  weftGetErrorString(rc), long(callMs), weftGetErrorString(async));
          int code = kOk;
          if (q != weftSuccess || async == weftSuccess) code = kNoAsyncError;
          else if (callMs > timeoutMs + 3000) code = kTooSlow;
          // A later call must fail at once with the same error.
          else if (weftAllReduce(send.data(), recv.data(), 1, weftFloat32, weftSum, comm, nullptr) == weftSuccess)
            code = kNoAsyncError;
          weftCommAbort(comm);
          return code;
        }
        fprintf(stderr, "rank %d: every AllReduce succeeded for 20 s after a peer was killed\n", rank);
        return int(kNeverFailed);
      },
      opt);
  EXPECT_EQ(r.failures({1}), "");
  EXPECT_FALSE(r.timedOut);
  munmap(running, sizeof(std::atomic<int>));
}

INSTANTIATE_TEST_SUITE_P(ProcessFaults, KilledRank, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Socket" : "Shm"; });

// (d2) As (d), but the ranks queue many AllReduces on a host stream (as the
// perf binaries and training loops do), and rank 1 dies in the middle of a
// batch. Operations still queued when a survivor's communicator fails must
// not run: one that ran would send the next call's data into a FIFO whose
// reader is still in the failed call, and that neighbour would then fail with
// weftInternalError ("received N bytes ... but the plan expects M:
// mismatched collective") or, with equal chunk sizes, silently reduce the
// wrong data. Every survivor must see weftRemoteError, and nobody may log a
// mismatch. The count is not a multiple of 3, so ring chunks differ in size
// and a stray slot is caught. Whether a stray slot arrives before the reader
// learns of the death is a race: this end-to-end check rarely loses it with
// three ranks here (the perf binaries on six ranks over network namespaces,
// tests/multihost, lost it every time); (d3) below makes it deterministic.
class KilledRankQueued : public ::testing::TestWithParam<bool> {};

TEST_P(KilledRankQueued, QueuedOperationsDoNotRunAfterTheFailure) {
  const bool overSockets = GetParam();
  constexpr int n = 3, batch = 16;
  constexpr size_t count = (256 << 10) + 1;
  enum { kOk = 0, kNeverFailed = 10, kWrongCode = 11, kTooSlow = 12 };
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [overSockets](int rank) {
    ChildEnv e = baseEnv("10000");
    if (overSockets) e.vars["WEFT_HOSTID"] = "host" + std::to_string(rank);
    return e;
  };
  const long logStart = logFileEnd();
  ProcessRunResult r = runRankProcesses(
      n,
      [](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        weftStream_t stream;
        if (weftHostStreamCreate(&stream) != weftSuccess) return 3;
        std::vector<float> send(count, 1.0f), recv(count);
        const int64_t start = nowMs();
        for (int round = 0; nowMs() - start < 20000; round++) {
          weftResult_t first = weftSuccess;
          for (int i = 0; i < batch && first == weftSuccess; i++) {
            first = weftAllReduce(send.data(), recv.data(), count, weftFloat32, weftSum, comm, stream);
            // The victim dies with half of its third batch queued.
            if (rank == 1 && round == 2 && i == batch / 2) {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              kill(getpid(), SIGKILL);
            }
          }
          const int64_t syncStart = nowMs();
          weftResult_t sync = weftHostStreamSynchronize(stream);
          if (first == weftSuccess) first = sync;
          if (first == weftSuccess) continue;
          weftResult_t async = weftSuccess;
          weftCommGetAsyncError(comm, &async);
          fprintf(stderr, "rank %d round %d: first failure %s (sync %s after %ld ms); async error %s: %s\n", rank,
                  round, weftGetErrorString(first), weftGetErrorString(sync), long(nowMs() - syncStart),
                  weftGetErrorString(async), weftGetLastError(comm));
          int code = kOk;
          if (first != weftRemoteError || (sync != weftSuccess && sync != weftRemoteError) ||
              async != weftRemoteError)
            code = kWrongCode;
          else if (nowMs() - syncStart > 10000 + 3000)
            code = kTooSlow;
          weftCommAbort(comm);
          weftHostStreamDestroy(stream);
          return code;
        }
        fprintf(stderr, "rank %d: no failure within 20 s\n", rank);
        return int(kNeverFailed);
      },
      opt);
  EXPECT_EQ(r.failures({1}), "");
  EXPECT_FALSE(r.timedOut);
  const std::string log = logTextSince(logStart);
  EXPECT_EQ(log.find("but the plan expects"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(ProcessFaults, KilledRankQueued, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Socket" : "Shm"; });

// (d3) The same defect made deterministic, in one process: rank 0's host
// stream holds AllReduce A (waiting for rank 1) and behind it AllReduce B of
// another count. Rank 0's communicator fails (here set directly, as when it
// lost some other peer). A fails; B must not run. Rank 1 then enters its
// AllReduce matching A: it may take A's first piece (A had sent it before
// failing) but nothing else, so it times out. Had B run, rank 1 would read
// B's first piece as A's next one and fail with weftInternalError ("received
// ... but the plan expects ...").
TEST(ProcessFaults, QueuedOperationsOfAFailedCommunicatorDoNotRun) {
  setenv("WEFT_TIMEOUT_MS", "1500", 1);
  setenv("WEFT_BUFFSIZE", "65536", 1);
  // FIFO pieces are what a stray operation would corrupt; under ll, or with
  // the one-shot plan on FIFOs, A's whole contribution is sent at once and
  // rank 1 would complete it: the ring, whose pieces depend on each other.
  setenv("WEFT_PROTO", "^ll", 1);
  setenv("WEFT_ALGO", "ring", 1);
  std::vector<weftComm_t> comms(2, nullptr);
  ASSERT_EQ(weftCommInitAll(comms.data(), 2, nullptr), weftSuccess);
  unsetenv("WEFT_TIMEOUT_MS");
  unsetenv("WEFT_BUFFSIZE");
  unsetenv("WEFT_PROTO");
  unsetenv("WEFT_ALGO");
  constexpr size_t countA = 1001, countB = 3001;  // one slot per chunk, chunk sizes differ
  std::vector<float> sendA(countA, 1.0f), recvA(countA), sendB(countB, 2.0f), recvB(countB, -7.0f);
  weftStream_t stream;
  ASSERT_EQ(weftHostStreamCreate(&stream), weftSuccess);
  ASSERT_EQ(weftAllReduce(sendA.data(), recvA.data(), countA, weftFloat32, weftSum, comms[0], stream), weftSuccess);
  ASSERT_EQ(weftAllReduce(sendB.data(), recvB.data(), countB, weftFloat32, weftSum, comms[0], stream), weftSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // A is waiting for rank 1
  comms[0]->setAsyncError(weftRemoteError, "test: rank 0 lost another peer");
  EXPECT_EQ(weftHostStreamSynchronize(stream), weftRemoteError);
  std::vector<float> recv1(countA);
  const int64_t start = nowMs();
  weftResult_t rc1 = weftAllReduce(sendA.data(), recv1.data(), countA, weftFloat32, weftSum, comms[1], nullptr);
  EXPECT_EQ(rc1, weftTimeout) << "rank 1 got " << weftGetErrorString(rc1) << ": " << weftGetLastError(comms[1])
                              << " (after " << nowMs() - start << " ms)";
  EXPECT_EQ(recvB[0], -7.0f) << "B wrote into its receive buffer after the communicator had failed";
  EXPECT_EQ(weftHostStreamDestroy(stream), weftSuccess);
  weftCommAbort(comms[0]);
  weftCommAbort(comms[1]);
}

// (e) Stray TCP clients at the bootstrap root: one sends garbage, one sends a
// handshake of the right size and magic with a made-up proof, one connects and
// says nothing. The ranks must still join and compute correct results.
TEST(ProcessFaults, StrayClientsAtTheRootDoNotBreakInit) {
  constexpr int n = 3;
  // A free port on loopback for WEFT_COMM_ID (rank 0's join runs the root there).
  int probe = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(probe, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(probe);
  const std::string commId = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  setenv("WEFT_COMM_ID", commId.c_str(), 1);

  // Ranks 1..n-1 wait for the parent's go (after the stray clients had their
  // say), so the root sees the strays before the real ranks complete it.
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<int> strays;
  std::string parentErrors;

  ProcessRunOptions opt;
  opt.deadlineMs = 60000;
  opt.env = [&](int) {
    ChildEnv e = baseEnv("20000");
    e.vars["WEFT_COMM_ID"] = commId;
    return e;
  };
  opt.whileRunning = [&](const std::vector<pid_t>&) {
    close(go[0]);
    auto connectRoot = [&]() -> int {
      const int64_t until = nowMs() + 10000;
      while (nowMs() < until) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
        close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return -1;
    };
    int garbage = connectRoot();
    int wrongSecret = connectRoot();
    int silent = connectRoot();
    if (garbage < 0 || wrongSecret < 0 || silent < 0) parentErrors += "could not connect to the root at " + commId;
    unsigned char junk[256];
    for (size_t i = 0; i < sizeof(junk); i++) junk[i] = static_cast<unsigned char>(i * 37 + 11);
    if (garbage >= 0 && send(garbage, junk, sizeof(junk), MSG_NOSIGNAL) != sizeof(junk)) parentErrors += "send junk; ";
    // A challenge and a made-up proof: what a client without the secret can send.
    handshake::Challenge c{handshake::kChallengeMagic, handshake::kVersion,
                           static_cast<uint32_t>(handshake::Purpose::kRoot), 0, {}};
    memset(c.nonce, 0x5a, sizeof(c.nonce));
    handshake::Proof proof;
    memset(proof.mac, 0x5a, sizeof(proof.mac));
    if (wrongSecret >= 0 && (send(wrongSecret, &c, sizeof(c), MSG_NOSIGNAL) != sizeof(c) ||
                             send(wrongSecret, &proof, sizeof(proof), MSG_NOSIGNAL) != sizeof(proof)))
      parentErrors += "send hello; ";
    for (int fd : {garbage, wrongSecret, silent})
      if (fd >= 0) strays.push_back(fd);
    // Let the root read and reject them before the real ranks come.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (write(go[1], "gogo", n - 1) != n - 1) parentErrors += "write go; ";
    close(go[1]);
  };
  const long logStart = logFileEnd();
  ProcessRunResult r = runRankProcesses(
      n,
      [&](int rank, const weftUniqueId& id) {
        close(go[1]);
        if (rank > 0) {
          char c;
          if (read(go[0], &c, 1) != 1) {
            fprintf(stderr, "rank %d: no go from the parent\n", rank);
            return 6;
          }
        }
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        int failed = 0;
        for (CollKind coll : {CollKind::AllReduce, CollKind::AllGather}) {
          Scenario s;
          s.coll = coll;
          s.count = 10007;
          s.seed = 42;
          std::string err = runAndCheck(comm, rank, n, s);
          if (!err.empty()) {
            fprintf(stderr, "rank %d: %s\n", rank, err.c_str());
            failed++;
          }
        }
        return failed ? 1 : (weftCommDestroy(comm) == weftSuccess ? 0 : 4);
      },
      opt);
  unsetenv("WEFT_COMM_ID");
  close(go[0]);
  for (int fd : strays) close(fd);
  EXPECT_EQ(parentErrors, "");
  EXPECT_EQ(r.failures(), "");
  // The strays really reached the root, and it said why it turned them away.
  const std::string log = logTextSince(logStart);
  EXPECT_NE(log.find("bad magic"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong secret"), std::string::npos) << log;
}

// (f) Rank 1 never calls the collective; rank 0 blocks in AllReduce; another
// thread of rank 0 aborts its communicator after 200 ms. The timeout is a
// minute, so only the abort can end the call, and it must do so promptly.
TEST(ProcessFaults, AbortFromAnotherThreadEndsABlockedCollective) {
  setenv("WEFT_TIMEOUT_MS", "60000", 1);
  setenv("WEFT_BUFFSIZE", "65536", 1);
  std::vector<weftComm_t> comms(2, nullptr);
  ASSERT_EQ(weftCommInitAll(comms.data(), 2, nullptr), weftSuccess);
  std::vector<float> send(100000, 1.0f), recv(100000, 0.0f);
  std::atomic<int64_t> abortedAt{0};
  std::atomic<int64_t> returnedAt{0};
  weftResult_t rc = weftSuccess;
  std::thread caller([&] {
    rc = weftAllReduce(send.data(), recv.data(), send.size(), weftFloat32, weftSum, comms[0], nullptr);
    returnedAt = nowMs();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  abortedAt = nowMs();
  weftResult_t abortRc = weftCommAbort(comms[0]);
  const int64_t abortReturned = nowMs();
  // Join with a bound: a hung caller must fail the test, not the suite.
  for (int i = 0; i < 500 && returnedAt == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_NE(returnedAt.load(), 0) << "AllReduce still blocked 5 s after weftCommAbort";
  caller.join();
  EXPECT_EQ(abortRc, weftSuccess);
  EXPECT_NE(rc, weftSuccess);
  EXPECT_LT(returnedAt - abortedAt, 2000) << "AllReduce returned " << (returnedAt - abortedAt) << " ms after abort";
  EXPECT_LT(abortReturned - abortedAt, 2000);
  // The aborted handle is gone; rank 1 is left alone and can still leave.
  int count = 0;
  EXPECT_EQ(weftCommCount(comms[0], &count), weftInvalidUsage);
  const int64_t destroyStart = nowMs();
  EXPECT_EQ(weftCommDestroy(comms[1]), weftSuccess);
  EXPECT_LT(nowMs() - destroyStart, 5000);
}

}  // namespace
}  // namespace weft::test
