// Every collective x type x op x placement x count, ranks as threads over the
// shared-memory transport, checked against float64 / exact references.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "collective_check.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {

const weftDataType_t kAllTypes[] = {weftInt8,   weftUint8,    weftInt32,      weftUint32,    weftInt64,   weftUint64,
                                    weftFloat16, weftFloat32, weftFloat64,    weftBfloat16, weftFloat8e4m3,
                                    weftFloat8e5m2};
const weftRedOp_t kAllOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg, kPreMulSum};
bool reduces(CollKind c) {
  return c == CollKind::AllReduce || c == CollKind::ReduceScatter || c == CollKind::Reduce;
}

class ThreadCollectives : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    // Small slots so that modest counts span many FIFO slots and loops.
    setenv("WEFT_BUFFSIZE", "16384", 1);
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
};

// Small counts: the whole matrix.
TEST_P(ThreadCollectives, AllTypesOpsPlacementsSmallCounts) {
  const int n = GetParam();
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  uint64_t seed = 1;
  for (CollKind coll : kAllColls)
    for (weftDataType_t type : kAllTypes)
      for (weftRedOp_t op : kAllOps) {
        if (!reduces(coll) && op != weftSum) continue;
        for (int place = 0; place < (hasInPlace(coll) ? 2 : 1); place++)
          for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(3001)}) {
            Scenario s;
            s.coll = coll;
            s.type = type;
            s.op = op;
            s.inPlace = place == 1;
            s.count = count;
            s.root = n > 1 ? (seed % n) : 0;
            s.seed = seed++;
            Inputs in = makeInputs(s, n);
            std::string err = ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); });
            ASSERT_EQ(err, "") << s.describe();
          }
      }
}

// A count that is not small: 1000003 elements for a few types.
TEST_P(ThreadCollectives, LargeCount) {
  const int n = GetParam();
  if (n > 4) GTEST_SKIP() << "large counts run with up to 4 ranks to keep the suite fast";
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  uint64_t seed = 100;
  for (CollKind coll : kAllColls)
    for (weftDataType_t type : {weftFloat32, weftBfloat16}) {
      Scenario s;
      s.coll = coll;
      s.type = type;
      s.count = 1000003;
      s.seed = seed++;
      s.root = n - 1;
      Inputs in = makeInputs(s, n);
            std::string err = ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); });
      ASSERT_EQ(err, "") << s.describe();
    }
}

// Same inputs give bit-identical outputs on every rank and every run.
TEST_P(ThreadCollectives, DeterministicAcrossRanksAndRuns) {
  const int n = GetParam();
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  Scenario s;
  s.coll = CollKind::AllReduce;
  s.type = weftFloat32;
  s.count = 100003;
  s.seed = 77;
  std::vector<uint64_t> digests(n);
  for (int run = 0; run < 3; run++) {
    std::string err = ranks.run([&](int r) {
      std::string e = runAndCheck(ranks.comm(r), r, n, s);
      uint64_t d = lastOutputDigest();
      if (run == 0) digests[r] = d;
      else if (digests[r] != d) e += "run " + std::to_string(run) + " differs on rank " + std::to_string(r);
      return e;
    });
    ASSERT_EQ(err, "");
  }
  for (int r = 1; r < n; r++) EXPECT_EQ(digests[r], digests[0]) << "rank " << r;
}

// Host streams: work is queued and the caller synchronises later.
TEST_P(ThreadCollectives, HostStreamAsync) {
  const int n = GetParam();
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  std::string err = ranks.run([&](int r) {
    weftStream_t stream;
    if (weftHostStreamCreate(&stream) != weftSuccess) return std::string("stream create failed");
    std::string e;
    for (CollKind coll : {CollKind::AllReduce, CollKind::AllGather, CollKind::SendRecv}) {
      Scenario s;
      s.coll = coll;
      s.count = 30011;
      s.seed = 5;
      s.stream = stream;
      e += runAndCheck(ranks.comm(r), r, n, s);
    }
    weftHostStreamDestroy(stream);
    return e;
  });
  EXPECT_EQ(err, "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadCollectives, ::testing::Values(1, 2, 3, 4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// A rank that destroys its communicator the moment its call returns must not
// pull memory from under a peer that is still finishing the same call (its
// last act rings the first rank's doorbell). The root of a Broadcast returns
// first; repeated, since the window is a few instructions wide.
TEST(ThreadRanksLifetime, FirstRankToDestroyLeavesPeersRunning) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  for (int round = 0; round < 40; ++round) {
    weftComm_t comms[2] = {nullptr, nullptr};
    ASSERT_EQ(weftCommInitAll(comms, 2, nullptr), weftSuccess);
    std::vector<std::thread> ranks;
    weftResult_t rc[2] = {weftInternalError, weftInternalError};
    float data[2][16];
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        for (int i = 0; i < 16; ++i) data[r][i] = r == 0 ? float(i * 3 + round) : -1.0f;
        rc[r] = weftBroadcast(data[r], data[r], 16, weftFloat32, 0, comms[r], nullptr);
        weftCommDestroy(comms[r]);
      });
    }
    for (auto& t : ranks) t.join();
    ASSERT_EQ(rc[0], weftSuccess);
    ASSERT_EQ(rc[1], weftSuccess);
    for (int i = 0; i < 16; ++i) ASSERT_EQ(data[1][i], float(i * 3 + round)) << "round " << round;
  }
}

// A rank may destroy its communicator as soon as its init returns, while a
// thread peer is still connecting to the FIFO it offered: the peer's init
// must still succeed (the FIFO's memory is owned by both ends).
TEST(ThreadRanksLifetime, RankDestroyingRightAfterInitLeavesPeersConnecting) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  for (int round = 0; round < 20; ++round) {
    weftUniqueId id;
    ASSERT_EQ(weftGetUniqueId(&id), weftSuccess);
    weftResult_t rc[2] = {weftInternalError, weftInternalError};
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        weftComm_t comm = nullptr;
        rc[r] = weftCommInitRank(&comm, 2, id, r);
        if (rc[r] == weftSuccess) weftCommDestroy(comm);
      });
    for (auto& t : ranks) t.join();
    ASSERT_EQ(rc[0], weftSuccess) << "round " << round;
    ASSERT_EQ(rc[1], weftSuccess) << "round " << round;
  }
}

}  // namespace
}  // namespace weft::test
