// An AllToAll over more peers than WEFT_ALLTOALL_MAX_PEERS (M) runs in
// batches of distances and keeps at most M distances connected, between
// calls too (src/core/alltoall_batches.h). The schedule is checked as a
// pure function (every distance once a call, never more than M held, only
// held distances outside the batch closed); thread ranks check results,
// the bound on the connection ends a rank holds, that a second call
// reconnects only what did not fit (and nothing when everything fits), and
// that an edge another call also uses is never closed under it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "collective_check.h"
#include "src/core/alltoall_batches.h"
#include "src/core/comm.h"
#include "src/core/connections.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {

// Checks one call's schedule and returns how many distances it connects.
size_t checkSchedule(int distances, size_t maxPeers, std::vector<int>* held) {
  const std::vector<AllToAllBatch> batches = scheduleAllToAll(distances, maxPeers, *held);
  std::set<int> ran, now(held->begin(), held->end());
  size_t connected = 0;
  for (const AllToAllBatch& b : batches) {
    for (int d : b.evict) {
      EXPECT_EQ(now.erase(d), 1u) << "closes distance " << d << ", which is not connected";
      EXPECT_EQ(std::count(b.distances.begin(), b.distances.end(), d), 0) << "closes distance " << d << " it runs";
    }
    for (int d : b.distances) {
      EXPECT_TRUE(ran.insert(d).second) << "distance " << d << " runs twice";
      connected += now.insert(d).second;
    }
    EXPECT_LE(now.size(), maxPeers) << "holds more than the bound";
    EXPECT_EQ(now, std::set<int>(b.heldAfter.begin(), b.heldAfter.end()));
  }
  EXPECT_EQ(ran.size(), size_t(distances));
  *held = batches.back().heldAfter;
  return connected;
}

TEST(AllToAllSchedule, KeepsWhatFitsAndReconnectsOnlyTheRest) {
  for (int distances : {1, 2, 7, 8, 63, 64, 65, 255, 511})
    for (size_t maxPeers : {size_t(1), size_t(3), size_t(8), size_t(64), size_t(600)}) {
      SCOPED_TRACE(std::to_string(distances) + " distances, bound " + std::to_string(maxPeers));
      std::vector<int> held;
      EXPECT_EQ(checkSchedule(distances, maxPeers, &held), size_t(distances));
      const size_t kept = std::min<size_t>(distances, maxPeers);
      EXPECT_EQ(held.size(), kept);
      for (int call = 0; call < 3; ++call) EXPECT_EQ(checkSchedule(distances, maxPeers, &held), distances - kept);
    }
}

TEST(AllToAllSchedule, BatchesAreFullAndTheFirstRunsWhatIsHeld) {
  std::vector<int> held;
  std::vector<AllToAllBatch> b = scheduleAllToAll(8, 3, held);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].distances, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(b[0].evict.empty());
  EXPECT_EQ(b[2].distances, (std::vector<int>{7, 8}));
  EXPECT_EQ(b[2].evict, (std::vector<int>{4, 5}));  // 6 stays: the bound is filled
  held = b.back().heldAfter;
  b = scheduleAllToAll(8, 3, held);
  EXPECT_EQ(b[0].distances, (std::vector<int>{6, 7, 8}));
  EXPECT_TRUE(b[0].evict.empty());  // the first batch never waits in a barrier
}

std::vector<size_t> perRank(const ThreadRanks& ranks, size_t (Connections::*what)() const) {
  std::vector<size_t> v;
  for (int r = 0; r < ranks.size(); ++r) v.push_back((ranks.comm(r)->connections.get()->*what)());
  return v;
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

// Rank r sends `count` bytes to r + distance and receives them from r - distance.
std::string shiftByDistance(ThreadRanks& ranks, int distance, size_t count) {
  const int n = ranks.size();
  return ranks.run([&](int r) -> std::string {
    std::vector<unsigned char> out(count, static_cast<unsigned char>(r)), in(count, 0xff);
    weftGroupStart();
    weftSend(out.data(), count, weftUint8, (r + distance) % n, ranks.comm(r), nullptr);
    weftRecv(in.data(), count, weftUint8, (r - distance + n) % n, ranks.comm(r), nullptr);
    if (weftGroupEnd() != weftSuccess) return "rank " + std::to_string(r) + ": " + weftGetLastError(ranks.comm(r));
    const unsigned char want = static_cast<unsigned char>((r - distance + n) % n);
    for (unsigned char c : in)
      if (c != want) return "rank " + std::to_string(r) + ": wrong bytes from its peer\n";
    return "";
  });
}

class AllToAllBatches : public ::testing::Test {
 protected:
  void SetUp() override { setenv("WEFT_BUFFSIZE", "16384", 1); }
  void TearDown() override {
    unsetenv("WEFT_ALLTOALL_MAX_PEERS");
    unsetenv("WEFT_SHM_DISABLE");
  }
  void expectBounded(const ThreadRanks& ranks, size_t maxPeers) {
    for (size_t ends : perRank(ranks, &Connections::peakTemporaryEnds)) EXPECT_LE(ends, 2 * maxPeers);
  }
};

TEST_F(AllToAllBatches, BoundedPeersGiveTheSameResultsAndHoldAtMostTheBound) {
  constexpr int n = 9;
  setenv("WEFT_ALLTOALL_MAX_PEERS", "3", 1);  // 8 peers: batches of 3, 3 and 2 distances
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> before = perRank(ranks, &Connections::size);
  uint64_t seed = 70;
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(5000)})
    for (bool inPlace : {false, true}) {
      ASSERT_EQ(allToAll(ranks, count, inPlace, seed++), "") << count << (inPlace ? " in place" : "");
      const std::vector<size_t> after = perRank(ranks, &Connections::size);
      for (int r = 0; r < n; ++r) EXPECT_LE(after[r], before[r] + 2 * 3) << "rank " << r << " holds past the bound";
    }
  expectBounded(ranks, 3);
  // Other collectives on the ring still run between batched calls.
  Scenario s;
  s.count = 1000;
  s.seed = seed++;
  Inputs in = makeInputs(s, n);
  ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); }), "");
  ASSERT_EQ(allToAll(ranks, 33, false, seed++), "");
}

// Fails where every call reconnects its pairs.
TEST_F(AllToAllBatches, ASecondCallReconnectsOnlyWhatDidNotFit) {
  constexpr int n = 9;  // 8 distances
  setenv("WEFT_ALLTOALL_MAX_PEERS", "3", 1);
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> start = perRank(ranks, &Connections::endsMade);
  ASSERT_EQ(allToAll(ranks, 5, false, 1), "");
  const std::vector<size_t> afterFirst = perRank(ranks, &Connections::endsMade);
  ASSERT_EQ(allToAll(ranks, 5, false, 2), "");
  const std::vector<size_t> afterSecond = perRank(ranks, &Connections::endsMade);
  for (int r = 0; r < n; ++r) {
    const size_t first = afterFirst[r] - start[r], second = afterSecond[r] - afterFirst[r];
    EXPECT_GE(first, 2u * (8 - 1)) << "rank " << r;  // a ring edge (distance 1) may be there already
    EXPECT_LE(second, 2u * (8 - 3)) << "rank " << r << ": three distances stay connected";
    EXPECT_LT(second, first) << "rank " << r;
  }
  expectBounded(ranks, 3);
}

TEST_F(AllToAllBatches, WhenEverythingFitsASecondCallConnectsNothing) {
  constexpr int n = 5;
  setenv("WEFT_ALLTOALL_MAX_PEERS", "4", 1);
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> start = perRank(ranks, &Connections::endsMade);
  ASSERT_EQ(allToAll(ranks, 10, false, 90), "");
  const std::vector<size_t> afterFirst = perRank(ranks, &Connections::endsMade);
  for (int call = 0; call < 3; ++call) ASSERT_EQ(allToAll(ranks, 10 + call, call == 1, 91 + call), "");
  EXPECT_EQ(perRank(ranks, &Connections::endsMade), afterFirst);
  for (int r = 0; r < n; ++r) EXPECT_GT(afterFirst[r], start[r]) << "rank " << r;
}

// A point-to-point call on an edge the AllToAll holds makes it permanent at
// both ends: later batches leave it open, and it carries the next call.
TEST_F(AllToAllBatches, AnEdgeAnotherCallUsesStaysOpen) {
  constexpr int n = 9;
  setenv("WEFT_ALLTOALL_MAX_PEERS", "3", 1);
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  ASSERT_EQ(allToAll(ranks, 3, false, 5), "");
  const int held = ranks.comm(0)->connections->allToAllHeld.back();  // the same distances at every rank
  const std::vector<size_t> temporary = perRank(ranks, &Connections::temporaryEnds);
  ASSERT_EQ(shiftByDistance(ranks, held, 100), "");
  const std::vector<size_t> made = perRank(ranks, &Connections::endsMade);
  const std::vector<size_t> temporaryAfter = perRank(ranks, &Connections::temporaryEnds);
  for (int r = 0; r < n; ++r) EXPECT_EQ(temporaryAfter[r] + 2, temporary[r]) << "rank " << r;
  for (int call = 0; call < 2; ++call) ASSERT_EQ(allToAll(ranks, 3, false, 6 + call), "");
  const std::vector<size_t> beforeShift = perRank(ranks, &Connections::endsMade);
  ASSERT_EQ(shiftByDistance(ranks, held, 100), "");
  EXPECT_EQ(perRank(ranks, &Connections::endsMade), beforeShift) << "the point-to-point edge was closed";
  for (int r = 0; r < n; ++r) EXPECT_GT(beforeShift[r], made[r]) << "rank " << r;
  expectBounded(ranks, 3);
}

// Over sockets a sender's last slots may still be in its staging FIFO when
// its part of a batch ends: the barrier before a close must keep them.
TEST_F(AllToAllBatches, OverSocketsEveryBatchArrivesWhole) {
  constexpr int n = 6;
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  setenv("WEFT_SHM_DISABLE", "1", 1);
  setenv("WEFT_ALLTOALL_MAX_PEERS", "2", 1);  // 5 peers: batches of 2, 2 and 1
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  uint64_t seed = 110;
  for (size_t count : {size_t(1), size_t(20000), size_t(300000)})
    for (bool inPlace : {false, true})
      ASSERT_EQ(allToAll(ranks, count, inPlace, seed++), "") << count << (inPlace ? " in place" : "");
  expectBounded(ranks, 2);
}

TEST_F(AllToAllBatches, UnboundedKeepsAConnectionPerPeerAndDirection) {
  constexpr int n = 5;
  setenv("WEFT_ALLTOALL_MAX_PEERS", "0", 1);
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  const std::vector<size_t> before = perRank(ranks, &Connections::size);
  ASSERT_EQ(allToAll(ranks, 10, false, 90), "");
  const std::vector<size_t> after = perRank(ranks, &Connections::size);
  for (int r = 0; r < n; ++r) EXPECT_GT(after[r], before[r]) << "rank " << r;
  for (size_t ends : perRank(ranks, &Connections::temporaryEnds)) EXPECT_EQ(ends, 0u);
}

}  // namespace
}  // namespace weft::test
