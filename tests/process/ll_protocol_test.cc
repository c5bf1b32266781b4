// The LL protocol (src/exec/host/ll_protocol.h) with ranks as processes on
// one host: every collective it carries, every reduction and type, in and
// out of place, against the float64 / exact references; long back-to-back
// sequences of calls of varying sizes over a small region (many rounds per
// call, both buffers reused all the time: a round-number or buffer-reuse bug
// shows up as wrong data or a hang); bit-identical AllReduce results on every
// rank; the selector choosing it by itself for small calls; and a peer that
// aborts, dies or never comes, which must fail the others, not hang them.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "process_ranks.h"
#include "src/core/comm.h"
#include "src/core/ll_comm.h"
#include "tests/collectives/collective_check.h"

namespace weft::test {
namespace {

ChildEnv llEnv(const char* proto, const char* llBytes, const char* timeoutMs) {
  ChildEnv e;
  e.vars["WEFT_PROTO"] = proto;
  e.vars["WEFT_LL_BUFFSIZE"] = llBytes;
  e.vars["WEFT_TIMEOUT_MS"] = timeoutMs;
  e.vars["WEFT_SOCKET_IFNAME"] = "lo";
  e.vars["WEFT_HOSTID"] = "";
  e.vars["WEFT_SHM_DISABLE"] = "";
  return e;
}

uint64_t llRounds(weftComm_t comm) { return comm->ll ? comm->ll->engine->roundsRun() : 0; }

const CollKind kLlColls[] = {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::AllGather, CollKind::Broadcast,
                             CollKind::Reduce};
const weftRedOp_t kOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg, kPreMulSum};

bool reduces(CollKind c) { return c == CollKind::AllReduce || c == CollKind::ReduceScatter || c == CollKind::Reduce; }

// Every (type, op) pair once as AllReduce, every type once per other
// collective, then `random` calls of random collective, type, op, placement,
// root and size (0 to a few rounds of a 2 KB region). The same on every rank.
std::vector<Scenario> sequence(int n, int random) {
  std::vector<Scenario> out;
  uint64_t seed = 7000 + n;
  auto add = [&](CollKind c, weftDataType_t t, weftRedOp_t op, bool inPlace, size_t count) {
    Scenario s;
    s.coll = c;
    s.type = t;
    s.op = reduces(c) ? op : weftSum;
    s.inPlace = inPlace;
    s.count = count;
    s.seed = seed++;
    s.root = int(s.seed % uint64_t(n));
    out.push_back(s);
  };
  for (int t = 0; t < weftNumTypes; t++)
    for (weftRedOp_t op : kOps) add(CollKind::AllReduce, weftDataType_t(t), op, (t + int(op)) % 2 == 1, 37 + t);
  for (CollKind c : kLlColls)
    for (int t = 0; t < weftNumTypes; t++) add(c, weftDataType_t(t), kOps[t % 6], t % 2 == 0, 1 + 29 * t);
  std::mt19937_64 rng(seed);
  const size_t sizes[] = {0, 1, 2, 3, 7, 13, 14, 15, 64, 255, 600, 1500, 4099};
  for (int i = 0; i < random; i++)
    add(kLlColls[rng() % 5], weftDataType_t(rng() % weftNumTypes), kOps[rng() % 6], rng() % 2 == 0,
        sizes[rng() % (sizeof(sizes) / sizeof(sizes[0]))]);
  return out;
}

// Runs the sequence; every AllReduce's output digest goes into one hash,
// which the ranks then compare (bit-identical results everywhere).
int runSequence(weftComm_t comm, int rank, int n, int random) {
  uint64_t hash = 0;
  int failed = 0;
  for (const Scenario& s : sequence(n, random)) {
    const std::string err = runAndCheck(comm, rank, n, s);
    if (!err.empty()) {
      fprintf(stderr, "rank %d/%d: %s\n", rank, n, err.c_str());
      if (err.find("returned") != std::string::npos) return 3;
      failed++;
    }
    if (s.coll == CollKind::AllReduce) hash = (hash * 1099511628211ull) ^ lastOutputDigest();
  }
  std::vector<uint64_t> all(static_cast<size_t>(n));
  if (weftAllGather(&hash, all.data(), 1, weftUint64, comm, nullptr) != weftSuccess) return 3;
  for (int r = 0; r < n; r++)
    if (all[size_t(r)] != hash) {
      fprintf(stderr, "rank %d: AllReduce outputs differ from rank %d's\n", rank, r);
      failed++;
    }
  return failed ? 1 : 0;
}

class LowLatencyProcesses : public ::testing::TestWithParam<int> {};

TEST_P(LowLatencyProcesses, ForcedEveryCollectiveBackToBack) {
  const int n = GetParam();
  const int random = n <= 4 ? 250 : 120;
  ProcessRunOptions opt;
  opt.deadlineMs = 120000;
  // A 2 KB region: a call of a few KB takes several rounds.
  opt.env = [](int) { return llEnv("ll", "2048", "30000"); };
  ProcessRunResult r = runRankProcesses(
      n,
      [n, random](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        const int rc = runSequence(comm, rank, n, random);
        if (rc == 0 && llRounds(comm) < 300) {
          fprintf(stderr, "rank %d: only %lu ll rounds ran: the calls took another path\n", rank,
                  static_cast<unsigned long>(llRounds(comm)));
          return 6;
        }
        return weftCommDestroy(comm) == weftSuccess ? rc : 4;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
  std::printf("%d ranks: %zu calls in %ld ms\n", n, sequence(n, random).size(), static_cast<long>(r.elapsedMs));
}

INSTANTIATE_TEST_SUITE_P(Ranks, LowLatencyProcesses, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// WEFT_SPIN: busy-polling ranks (1) and yielding ones (0) both get every
// result right, with fewer ranks than cores and with more; unset (auto), a
// rank busy-polls exactly when the host's ranks have a CPU each.
struct WaitMode {
  int n;
  const char* spin;  // WEFT_SPIN; "" unset
};

void PrintTo(const WaitMode& m, std::ostream* os) { *os << m.n << " ranks, WEFT_SPIN=\"" << m.spin << "\""; }

class LowLatencyWaitModes : public ::testing::TestWithParam<WaitMode> {};

TEST_P(LowLatencyWaitModes, RightResultsAndTheExpectedMode) {
  const WaitMode m = GetParam();
  cpu_set_t cpus;
  const int ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const bool expectBusy = m.spin[0] ? m.spin[0] == '1' : m.n <= ncpu;
  ProcessRunOptions opt;
  opt.deadlineMs = 120000;
  opt.env = [m](int) {
    ChildEnv e = llEnv("ll", "2048", "30000");
    e.vars["WEFT_SPIN"] = m.spin;
    return e;
  };
  ProcessRunResult r = runRankProcesses(
      m.n,
      [m, expectBusy](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, m.n, id, rank)) return e;
        if (comm->busyPoll != expectBusy) {
          fprintf(stderr, "rank %d: WEFT_SPIN=\"%s\" with %d ranks: busyPoll %d, expected %d\n", rank, m.spin, m.n,
                  int(comm->busyPoll), int(expectBusy));
          return 7;
        }
        const int rc = runSequence(comm, rank, m.n, 80);
        return weftCommDestroy(comm) == weftSuccess ? rc : 4;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
}

INSTANTIATE_TEST_SUITE_P(Spin, LowLatencyWaitModes,
                         ::testing::Values(WaitMode{2, "1"}, WaitMode{2, "0"}, WaitMode{4, "1"}, WaitMode{4, "0"},
                                           WaitMode{2, ""}, WaitMode{4, ""}),
                         [](const auto& info) {
                           const char* s = info.param.spin;
                           return std::to_string(info.param.n) + "ranks" +
                                  (s[0] == '1' ? "Busy" : s[0] == '0' ? "Yield" : "Auto");
                         });

// Unforced: the cost model takes LL for small calls and the ring for large
// ones, and WEFT_PROTO=^ll keeps it off.
TEST(LowLatencySelection, ChosenForSmallCallsOnly) {
  constexpr int n = 2;
  ProcessRunOptions opt;
  opt.deadlineMs = 60000;
  opt.env = [](int) { return llEnv("", "", "30000"); };
  ProcessRunResult r = runRankProcesses(
      n,
      [](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        std::vector<float> send(4 << 20, 1.0f), recv(4 << 20);
        if (weftAllReduce(send.data(), recv.data(), 2, weftFloat32, weftSum, comm, nullptr) != weftSuccess) return 3;
        const uint64_t afterSmall = llRounds(comm);
        if (weftAllReduce(send.data(), recv.data(), send.size(), weftFloat32, weftSum, comm, nullptr) != weftSuccess)
          return 3;
        if (recv[0] != 2.0f || recv.back() != 2.0f) return 1;
        const uint64_t afterLarge = llRounds(comm);
        if (afterSmall != 1 || afterLarge != afterSmall) {
          fprintf(stderr, "rank %d: ll rounds %lu after 8 B, %lu after 16 MB (want 1, 1)\n", rank,
                  static_cast<unsigned long>(afterSmall), static_cast<unsigned long>(afterLarge));
          return 5;
        }
        return weftCommDestroy(comm) == weftSuccess ? 0 : 4;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
}

TEST(LowLatencySelection, ExcludedByWeftProto) {
  constexpr int n = 2;
  ProcessRunOptions opt;
  opt.env = [](int) { return llEnv("^ll", "", "30000"); };
  ProcessRunResult r = runRankProcesses(
      n,
      [](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        float v = 1, out = 0;
        if (weftAllReduce(&v, &out, 1, weftFloat32, weftSum, comm, nullptr) != weftSuccess || out != 2.0f) return 1;
        if (comm->ll) return 5;  // no region was set up
        return weftCommDestroy(comm) == weftSuccess ? 0 : 4;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
}

// A peer leaves while the others loop on tiny LL AllReduces: by
// weftCommAbort, or killed. The others must get an error long before the
// communicator timeout (60 s), not hang.
enum class Leave { Abort, Kill };

class LowLatencyPeerLeaves : public ::testing::TestWithParam<Leave> {};

TEST_P(LowLatencyPeerLeaves, OthersFailNotHang) {
  const Leave how = GetParam();
  constexpr int n = 3, leaver = 2;
  constexpr int64_t boundMs = 20000;
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) { return llEnv("ll", "", "60000"); };
  ProcessRunResult r = runRankProcesses(
      n,
      [how](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        float v[2] = {1, 2}, out[2];
        for (int it = 0;; it++) {
          if (rank == leaver && it == 500) {
            if (how == Leave::Kill) kill(getpid(), SIGKILL);
            weftCommAbort(comm);
            return 0;
          }
          const int64_t start = nowMs();
          const weftResult_t rc = weftAllReduce(v, out, 2, weftFloat32, weftSum, comm, nullptr);
          if (rc == weftSuccess) continue;
          const int64_t took = nowMs() - start;
          fprintf(stderr, "rank %d: iteration %d returned %s after %ld ms\n", rank, it, weftGetErrorString(rc),
                  long(took));
          weftCommAbort(comm);
          return it >= 500 && took < boundMs ? 0 : 1;
        }
      },
      opt);
  EXPECT_EQ(r.failures(how == Leave::Kill ? std::vector<int>{leaver} : std::vector<int>{}), "");
  EXPECT_FALSE(r.timedOut);
}

INSTANTIATE_TEST_SUITE_P(LowLatency, LowLatencyPeerLeaves, ::testing::Values(Leave::Abort, Leave::Kill),
                         [](const auto& info) { return info.param == Leave::Abort ? "Abort" : "Kill"; });

// A peer that never calls: the waiting rank times out at WEFT_TIMEOUT_MS.
class LowLatencyTimeout : public ::testing::TestWithParam<const char*> {};

// Under either wait mode (WEFT_SPIN).
TEST_P(LowLatencyTimeout, AbsentPeerTimesOut) {
  constexpr int n = 2;
  ProcessRunOptions opt;
  opt.deadlineMs = 30000;
  const std::string spin = GetParam();
  opt.env = [spin](int) {
    ChildEnv e = llEnv("ll", "", "1000");
    e.vars["WEFT_SPIN"] = spin;
    return e;
  };
  ProcessRunResult r = runRankProcesses(
      n,
      [](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        float v = 1, out = 0;
        if (rank == 1) {
          usleep(4000 * 1000);
          weftCommAbort(comm);
          return 0;
        }
        const int64_t start = nowMs();
        const weftResult_t rc = weftAllReduce(&v, &out, 1, weftFloat32, weftSum, comm, nullptr);
        const int64_t took = nowMs() - start;
        fprintf(stderr, "rank 0: %s after %ld ms: %s\n", weftGetErrorString(rc), long(took), weftGetLastError(comm));
        weftCommAbort(comm);
        return rc == weftTimeout && took >= 900 && took < 3500 ? 0 : 1;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
}

INSTANTIATE_TEST_SUITE_P(Spin, LowLatencyTimeout, ::testing::Values("1", "0"),
                         [](const auto& info) { return std::string(info.param[0] == '1' ? "Busy" : "Yield"); });

}  // namespace
}  // namespace weft::test
