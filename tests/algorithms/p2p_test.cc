#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "algorithms/p2p.h"
#include "src/util/error.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using algo::P2POp;

TEST(AllToAll, VerifiedUpTo16RanksAndSpread) {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 11, 16, 33, 64})
    for (uint64_t count : {0ull, 1ull, 17ull, 100ull}) {
      algo::CollArgs a;
      a.coll = plan::Coll::AllToAll;
      a.nranks = n;
      a.count = count;
      a.geometry = tinyFifo();
      verify::Result r = verify::verify(problemFor(algo::buildAllToAll, a, false));
      ASSERT_TRUE(r.ok) << label(a, false) << "\n" << r.text();
    }
}

TEST(AllToAll, OneChannelPerPeerAndDirection) {
  algo::CollArgs a;
  a.coll = plan::Coll::AllToAll;
  a.nranks = 5;
  a.rank = 2;
  a.count = 10;
  plan::Plan p = algo::buildAllToAll(a);
  EXPECT_EQ(p.channels.size(), 1u + 2u * 4u);
  for (const auto& ch : p.channels) EXPECT_EQ(ch.steps.size(), 1u);
}

verify::Result runBatch(const std::vector<std::vector<P2POp>>& ops) {
  verify::Problem p = verify::p2pProblem(ops, tinyFifo());
  for (int r = 0; r < int(ops.size()); r++) p.plans.push_back(algo::buildP2P(int(ops.size()), r, 4, ops[r]));
  return verify::verify(p);
}

// A random batch: for each ordered pair a random number of messages of
// random sizes, the send and the receive listed in shuffled user order on
// each side; ranks also send to themselves.
std::vector<std::vector<P2POp>> randomBatch(int n, std::mt19937& rng) {
  std::vector<std::vector<P2POp>> ops(n);
  for (int s = 0; s < n; s++)
    for (int d = 0; d < n; d++) {
      int msgs = int(rng() % 3);
      for (int m = 0; m < msgs; m++) {
        uint64_t count = rng() % 70;
        ops[s].push_back({true, d, count, 0});
        ops[d].push_back({false, s, count, 0});
      }
    }
  for (auto& list : ops) {
    // Shuffle, but keep per (peer, direction) order: that order is the match.
    std::vector<P2POp> shuffled;
    std::map<std::pair<int, bool>, std::vector<P2POp>> byKey;
    for (auto& op : list) byKey[{op.peer, op.isSend}].push_back(op);
    std::vector<std::pair<int, bool>> keys;
    for (auto& [k, v] : byKey)
      for (size_t i = 0; i < v.size(); i++) keys.push_back(k);
    std::shuffle(keys.begin(), keys.end(), rng);
    std::map<std::pair<int, bool>, size_t> next;
    for (auto& k : keys) shuffled.push_back(byKey[k][next[k]++]);
    for (size_t i = 0; i < shuffled.size(); i++) shuffled[i].bind = uint16_t(i);
    list = shuffled;
  }
  return ops;
}

TEST(P2P, RandomBatchesVerify) {
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 40; iter++) {
    int n = 1 + int(rng() % 9);
    auto ops = randomBatch(n, rng);
    verify::Result r = runBatch(ops);
    ASSERT_TRUE(r.ok) << "iteration " << iter << " n=" << n << "\n" << r.text();
  }
}

TEST(P2P, SameDirectionCallsStayInOrderOnOneChannel) {
  std::vector<P2POp> ops = {{true, 1, 5, 0}, {false, 1, 7, 1}, {true, 1, 9, 2}, {true, 2, 3, 3}};
  plan::Plan p = algo::buildP2P(3, 0, 4, ops);
  ASSERT_EQ(p.channels.size(), 3u);
  ASSERT_EQ(p.channels[0].steps.size(), 2u);
  EXPECT_EQ(p.channels[0].steps[0].count, 5u);
  EXPECT_EQ(p.channels[0].steps[0].bind, 0);
  EXPECT_EQ(p.channels[0].steps[1].count, 9u);
  EXPECT_EQ(p.channels[0].steps[1].bind, 2);
  EXPECT_EQ(p.channels[1].steps[0].recvPeer[0], 1);
  EXPECT_EQ(p.channels[1].steps[0].bind, 1);
}

TEST(P2P, MismatchedOrderIsCaughtByVerifier) {
  // Rank 0 sends 5 then 9 to rank 1; rank 1 receives 9 then 5.
  std::vector<std::vector<P2POp>> ops = {{{true, 1, 5, 0}, {true, 1, 9, 1}}, {{false, 0, 9, 0}, {false, 0, 5, 1}}};
  verify::Result r = runBatch(ops);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(verify::IssueKind::SizeMismatch)) << r.text();
}

TEST(P2P, UnmatchedSelfOpThrows) {
  std::vector<P2POp> ops = {{true, 0, 5, 0}};
  try {
    algo::buildP2P(2, 0, 4, ops);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), weftInvalidUsage);
  }
  ops.push_back({false, 0, 6, 1});  // sizes differ
  EXPECT_THROW(algo::buildP2P(2, 0, 4, ops), Error);
  ops[1].count = 5;
  EXPECT_NO_THROW(algo::buildP2P(2, 0, 4, ops));
}

TEST(P2P, PeerOutOfRangeThrows) {
  EXPECT_THROW(algo::buildP2P(2, 0, 4, {{true, 2, 5, 0}}), Error);
}

}  // namespace
}  // namespace weft::test
