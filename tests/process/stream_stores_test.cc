// Streaming (non-temporal) stores for large host calls
// (WEFT_STREAM_MIN_BYTES, src/kernels/streaming.h): with the threshold at 1
// byte every call writes its output that way, on the FIFO path (ordinary
// buffers) and on the single-copy path (registered weftMemAlloc buffers,
// every size single-copy). Every collective, in and out of place, odd sizes,
// every reduction on several types, against the float64 / exact references
// with poisoned outputs; ranks as processes (2 to 8) and as threads (2 to 10).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "process_ranks.h"
#include "src/core/comm.h"
#include "src/core/direct_comm.h"
#include "tests/collectives/collective_check.h"
#include "tests/collectives/thread_ranks.h"

namespace weft::test {
namespace {

const char* const kVars[][2] = {{"WEFT_STREAM_MIN_BYTES", "1"},
                                {"WEFT_DIRECT_MIN_BYTES", "1"},
                                {"WEFT_PROTO", "simple"},
                                {"WEFT_SOCKET_IFNAME", "lo"},
                                {"WEFT_TIMEOUT_MS", "30000"}};

const CollKind kColls[] = {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::AllGather, CollKind::Broadcast,
                           CollKind::Reduce};
const weftRedOp_t kOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg, kPreMulSum};
const weftDataType_t kTypes[] = {weftFloat32, weftFloat64, weftInt32, weftFloat16, weftBfloat16, weftUint8};

// Every (collective, placement, registration) with an odd size past a
// streaming block (8 KB), every op once per type as AllReduce, then random
// small and odd sizes. The same on every rank.
std::vector<Scenario> sequence(int n, int random) {
  std::vector<Scenario> out;
  uint64_t seed = 9100 + uint64_t(n);
  auto add = [&](CollKind c, weftDataType_t t, weftRedOp_t op, bool inPlace, bool reg, size_t count) {
    Scenario s;
    s.coll = c;
    s.type = t;
    s.op = (c == CollKind::AllReduce || c == CollKind::ReduceScatter || c == CollKind::Reduce) ? op : weftSum;
    s.inPlace = inPlace;
    s.registered = reg;
    s.count = count;
    s.seed = seed++;
    s.root = int(s.seed % uint64_t(n));
    out.push_back(s);
  };
  for (CollKind c : kColls)
    for (int v = 0; v < 4; v++) add(c, weftFloat64, weftSum, v & 1, v & 2, 4099 + 2 * v);
  for (weftDataType_t t : kTypes)
    for (weftRedOp_t op : kOps) add(CollKind::AllReduce, t, op, (int(t) + int(op)) % 2, int(op) % 2 == 0, 5003);
  std::mt19937_64 rng(seed);
  const size_t sizes[] = {0, 1, 3, 17, 255, 1021, 2049, 6151, 20011};
  for (int i = 0; i < random; i++)
    add(kColls[rng() % 5], kTypes[rng() % 6], kOps[rng() % 6], rng() % 2, rng() % 2, sizes[rng() % 9]);
  return out;
}

std::string runSequence(weftComm_t comm, int rank, int n, int random) {
  std::string failures;
  for (const Scenario& s : sequence(n, random)) {
    const std::string err = runAndCheck(comm, rank, n, s);
    if (!err.empty()) failures += "rank " + std::to_string(rank) + ": " + err + "\n";
  }
  if (!comm->direct || comm->direct->callsRun == 0) failures += "rank " + std::to_string(rank) + ": no single-copy call\n";
  if (comm->streamMinBytes != 1) failures += "rank " + std::to_string(rank) + ": WEFT_STREAM_MIN_BYTES not read\n";
  return failures;
}

class StreamStoresProcesses : public ::testing::TestWithParam<int> {};

TEST_P(StreamStoresProcesses, EveryCollectiveChecked) {
  const int n = GetParam();
  ProcessRunOptions opt;
  opt.deadlineMs = 120000;
  opt.env = [](int) {
    ChildEnv e;
    for (const auto& v : kVars) e.vars[v[0]] = v[1];
    e.vars["WEFT_HOSTID"] = "";
    e.vars["WEFT_SHM_DISABLE"] = "";
    return e;
  };
  ProcessRunResult r = runRankProcesses(
      n,
      [n](int rank, const weftUniqueId& id) {
        weftComm_t comm;
        if (int e = initOrReport(&comm, n, id, rank)) return e;
        const std::string failures = runSequence(comm, rank, n, n <= 4 ? 40 : 15);
        if (!failures.empty()) fprintf(stderr, "%s", failures.c_str());
        return weftCommDestroy(comm) == weftSuccess ? (failures.empty() ? 0 : 1) : 4;
      },
      opt);
  EXPECT_EQ(r.failures(), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, StreamStoresProcesses, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(StreamStoresThreads, EveryCollectiveChecked) {
  for (const auto& v : kVars) setenv(v[0], v[1], 1);
  // 10 ranks: a share goes to more outputs than one streamed block group
  // carries (8); the rest are copies of their own.
  for (int n : {2, 5, 10}) {
    ThreadRanks ranks(n);
    ASSERT_EQ(ranks.status(), weftSuccess);
    EXPECT_EQ(ranks.run([&](int r) { return runSequence(ranks.comm(r), r, n, n > 5 ? 8 : 20); }), "") << n << " thread ranks";
  }
  for (const auto& v : kVars) unsetenv(v[0]);
}

}  // namespace
}  // namespace weft::test
