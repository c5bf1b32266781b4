// Every collective with ranks as separate processes: over shared memory
// (same host) and over the socket transport (forced by distinct host ids, or
// by WEFT_SHM_DISABLE), checked against float64 / exact references.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "process_ranks.h"
#include "tests/collectives/collective_check.h"

namespace weft::test {
namespace {

struct TypeOp {
  weftDataType_t type;
  weftRedOp_t op;
};
// Reductions see every pair; copies only care about the element size.
const TypeOp kTypeOps[] = {
    {weftFloat32, weftSum}, {weftBfloat16, weftAvg}, {weftInt32, weftMax}, {weftFloat64, kPreMulSum}};
bool reduces(CollKind c) {
  return c == CollKind::AllReduce || c == CollKind::ReduceScatter || c == CollKind::Reduce;
}

// With WEFT_BUFFSIZE=65536 and 8 slots a slot holds 8 KiB: 20011 elements
// of 4 bytes cross ~10 slots per rank block for small rank counts.
constexpr size_t kMultiSlotCount = 20011;
constexpr size_t kLargeCount = 1000003;

std::vector<Scenario> scenarios(int n, bool withLarge) {
  std::vector<Scenario> out;
  uint64_t seed = 1000 + n;
  for (CollKind coll : kAllColls)
    for (const TypeOp& to : kTypeOps)
      for (int place = 0; place < (hasInPlace(coll) ? 2 : 1); place++)
        for (size_t count : {size_t(0), size_t(1), size_t(7), kMultiSlotCount, kLargeCount}) {
          if (count == kLargeCount && (!withLarge || to.type != weftFloat32)) continue;
          Scenario s;
          s.coll = coll;
          s.type = to.type;
          s.op = reduces(coll) ? to.op : weftSum;
          s.inPlace = place == 1;
          s.count = count;
          s.seed = seed++;
          s.root = static_cast<int>(s.seed % n);
          out.push_back(s);
        }
  return out;
}

// The body every child runs: init, every scenario, destroy.
int runScenarios(int rank, int n, const weftUniqueId& id, bool withLarge) {
  weftComm_t comm = nullptr;
  weftResult_t rc = weftCommInitRank(&comm, n, id, rank);
  if (rc != weftSuccess) {
    fprintf(stderr, "rank %d: weftCommInitRank: %s (%s)\n", rank, weftGetErrorString(rc), weftGetLastError(nullptr));
    return 2;
  }
  int failed = 0;
  for (const Scenario& s : scenarios(n, withLarge)) {
    std::string err = runAndCheck(comm, rank, n, s);
    if (!err.empty()) {
      fprintf(stderr, "rank %d/%d: %s\n", rank, n, err.c_str());
      // An API error leaves the peers waiting in this collective: stop.
      if (err.find("returned") != std::string::npos) return 3;
      failed++;
    }
  }
  rc = weftCommDestroy(comm);
  if (rc != weftSuccess) {
    fprintf(stderr, "rank %d: weftCommDestroy: %s\n", rank, weftGetErrorString(rc));
    return 4;
  }
  return failed ? 1 : 0;
}

enum class Wire { Shm, SocketByHostId, SocketByShmDisable };

struct Case {
  int nranks;
  Wire wire;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const char* w = info.param.wire == Wire::Shm              ? "Shm"
                  : info.param.wire == Wire::SocketByHostId ? "SocketHostIds"
                                                            : "SocketShmDisabled";
  return std::string(w) + "_" + std::to_string(info.param.nranks) + "ranks";
}

class ProcessCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(ProcessCollectives, EveryCollectiveChecked) {
  const Case c = GetParam();
  const int n = c.nranks;
  ProcessRunOptions opt;
  opt.deadlineMs = 90000;
  opt.env = [c](int rank) {
    ChildEnv e;
    e.vars["WEFT_BUFFSIZE"] = "65536";
    e.vars["WEFT_TIMEOUT_MS"] = "30000";
    e.vars["WEFT_SOCKET_IFNAME"] = "lo";
    e.vars["WEFT_HOSTID"] = c.wire == Wire::SocketByHostId ? "host" + std::to_string(rank) : "";
    e.vars["WEFT_SHM_DISABLE"] = c.wire == Wire::SocketByShmDisable ? "1" : "";
    return e;
  };
  // Every rank generates every rank's inputs, so the large count costs
  // O(n^2) on two cores: it runs up to 4 ranks over shared memory and up to
  // 3 over sockets.
  const bool withLarge = c.wire == Wire::Shm ? n <= 4 : n <= 3;
  const long logStart = logFileEnd();
  ProcessRunResult r =
      runRankProcesses(n, [n, withLarge](int rank, const weftUniqueId& id) { return runScenarios(rank, n, id, withLarge); },
                       opt);
  EXPECT_EQ(r.failures(), "");
  std::printf("%d ranks: %zu scenarios in %ld ms\n", n, scenarios(n, withLarge).size(), static_cast<long>(r.elapsedMs));

  // Every connection used the transport this case is about (the log holds one
  // "conn ... via <transport>" line per connection end).
  const std::string log = logTextSince(logStart);
  const bool sawShm = log.find("via SHM") != std::string::npos;
  const bool sawSocket = log.find("via NET/Socket") != std::string::npos;
  if (c.wire == Wire::Shm) {
    EXPECT_TRUE(sawShm) << log;
    EXPECT_FALSE(sawSocket) << log;
  } else {
    EXPECT_TRUE(sawSocket) << log;
    EXPECT_FALSE(sawShm) << log;
  }
}

INSTANTIATE_TEST_SUITE_P(Processes, ProcessCollectives,
                         ::testing::Values(Case{2, Wire::Shm}, Case{3, Wire::Shm}, Case{4, Wire::Shm},
                                           Case{8, Wire::Shm}, Case{2, Wire::SocketByHostId},
                                           Case{3, Wire::SocketByHostId}, Case{4, Wire::SocketByHostId},
                                           Case{8, Wire::SocketByHostId}, Case{3, Wire::SocketByShmDisable}),
                         caseName);

}  // namespace
}  // namespace weft::test
