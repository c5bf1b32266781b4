// An AllToAll over more peers than WEFT_ALLTOALL_MAX_PEERS runs in batches
// and closes the connections each batch opened: thread ranks check their
// results (every count, in and out of place, after other collectives) and
// that a rank holds no more connection ends after the call than before,
// where an unbounded AllToAll keeps one per peer and direction.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "collective_check.h"
#include "src/core/comm.h"
#include "src/core/connections.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {

std::vector<size_t> connectionEnds(const ThreadRanks& ranks) {
  std::vector<size_t> ends;
  for (int r = 0; r < ranks.size(); ++r) ends.push_back(ranks.comm(r)->connections->size());
  return ends;
}

std::string allToAll(ThreadRanks& ranks, size_t count, bool inPlace, uint64_t seed) {
  Scenario s;
  s.coll = CollKind::AllToAll;
  s.count = count;
  s.inPlace = inPlace;
  s.seed = seed;
  const int n = ranks.size();
  Inputs in = makeInputs(s, n);
  return ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); });
}

class AllToAllBatches : public ::testing::Test {
 protected:
  void SetUp() override { setenv("WEFT_BUFFSIZE", "16384", 1); }
  void TearDown() override {
    unsetenv("WEFT_ALLTOALL_MAX_PEERS");
    unsetenv("WEFT_SHM_DISABLE");
  }
};

TEST_F(AllToAllBatches, BoundedPeersGiveTheSameResultsAndKeepNoConnections) {
  constexpr int n = 9;
  setenv("WEFT_ALLTOALL_MAX_PEERS", "3", 1);  // 8 peers: batches of 3, 3 and 2 distances
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> before = connectionEnds(ranks);
  uint64_t seed = 70;
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(5000)})
    for (bool inPlace : {false, true}) {
      ASSERT_EQ(allToAll(ranks, count, inPlace, seed++), "") << count << (inPlace ? " in place" : "");
      EXPECT_EQ(connectionEnds(ranks), before) << "a batch left connections behind";
    }
  // Other collectives on the ring still run between batched calls.
  Scenario s;
  s.count = 1000;
  s.seed = seed++;
  Inputs in = makeInputs(s, n);
  ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); }), "");
  ASSERT_EQ(allToAll(ranks, 33, false, seed++), "");
}

// Over sockets a sender's last slots may still be in its staging FIFO when
// its part of a batch ends: the barrier before the close must keep them.
TEST_F(AllToAllBatches, OverSocketsEveryBatchArrivesWhole) {
  constexpr int n = 6;
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  setenv("WEFT_SHM_DISABLE", "1", 1);
  setenv("WEFT_ALLTOALL_MAX_PEERS", "2", 1);  // 5 peers: batches of 2, 2 and 1
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> before = connectionEnds(ranks);
  uint64_t seed = 110;
  for (size_t count : {size_t(1), size_t(20000), size_t(300000)})
    for (bool inPlace : {false, true}) {
      ASSERT_EQ(allToAll(ranks, count, inPlace, seed++), "") << count << (inPlace ? " in place" : "");
      EXPECT_EQ(connectionEnds(ranks), before) << "a batch left connections behind";
    }
}

TEST_F(AllToAllBatches, UnboundedKeepsAConnectionPerPeerAndDirection) {
  constexpr int n = 5;
  setenv("WEFT_ALLTOALL_MAX_PEERS", "0", 1);
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> before = connectionEnds(ranks);
  ASSERT_EQ(allToAll(ranks, 10, false, 90), "");
  const std::vector<size_t> after = connectionEnds(ranks);
  for (int r = 0; r < n; ++r) EXPECT_GT(after[r], before[r]) << "rank " << r;
}

}  // namespace
}  // namespace weft::test
