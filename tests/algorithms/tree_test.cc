#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "algorithms/double_tree.h"
#include "algorithms/tree.h"
#include "src/util/error.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

std::vector<int> rankSpread() {
  std::vector<int> ns;
  for (int n = 1; n <= 16; n++) ns.push_back(n);
  for (int n : {24, 31, 37, 64, 100, 128}) ns.push_back(n);
  return ns;
}

std::vector<uint64_t> counts(int n) { return {0, 1, uint64_t(n) + 1, 97, 1009}; }

void expectVerified(const Builder& build, algo::CollArgs a, const std::string& what) {
  for (bool inPlace : {false, true}) {
    verify::Result r = verify::verify(problemFor(build, a, inPlace));
    ASSERT_TRUE(r.ok) << what << " " << label(a, inPlace) << "\n" << r.text();
  }
}

TEST(Tree, BinaryTreeShape) {
  // n = 14 as in NCCL's notes: 0 -> 8; 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13; ...
  std::vector<int> p = algo::binaryTreeParents(14);
  EXPECT_EQ(p[0], -1);
  EXPECT_EQ(p[8], 0);
  EXPECT_EQ(p[4], 8);
  EXPECT_EQ(p[12], 8);
  EXPECT_EQ(p[10], 12);
  EXPECT_EQ(p[13], 12);
  EXPECT_EQ(p[9], 10);
  EXPECT_EQ(p[11], 10);
  for (int r = 1; r < 14; r += 2) EXPECT_EQ(algo::treeLinks(p, r).children.size(), 0u) << r;
}

TEST(Tree, AllReduceVerified) {
  for (int n : rankSpread())
    for (uint64_t count : counts(n))
      for (int ch : {1, 2, 4}) {
        algo::CollArgs a;
        a.nranks = n;
        a.count = count;
        a.nChannels = ch;
        a.geometry = tinyFifo();
        expectVerified([](const algo::CollArgs& x) { return algo::buildTree(x); }, a, "binary tree");
        if (HasFatalFailure()) return;
      }
}

TEST(Tree, RandomTreesVerified) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 60; iter++) {
    int n = 1 + int(rng() % 40);
    // Random tree with at most two children per node, random root.
    std::vector<int> perm(n);
    for (int i = 0; i < n; i++) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int> parent(n, -1), kids(n, 0);
    for (int i = 1; i < n; i++) {
      int p;
      do p = perm[rng() % i];
      while (kids[p] == 2);
      kids[p]++;
      parent[perm[i]] = p;
    }
    algo::CollArgs a;
    a.nranks = n;
    a.count = 1 + rng() % 500;
    a.nChannels = 1 + int(rng() % 3);
    a.geometry = tinyFifo();
    expectVerified([&](const algo::CollArgs& x) { return algo::buildTree(x, parent); }, a, "random tree");
    if (HasFatalFailure()) return;
  }
}

TEST(Tree, RejectsBadTrees) {
  algo::CollArgs a;
  a.nranks = 4;
  a.count = 10;
  EXPECT_THROW(algo::buildTree(a, {-1, 0, 0, 0}), Error);   // three children
  EXPECT_THROW(algo::buildTree(a, {-1, -1, 0, 1}), Error);  // two roots
  EXPECT_THROW(algo::buildTree(a, {-1, 2, 3, 1}), Error);   // cycle
  EXPECT_THROW(algo::buildTree(a, {-1, 0}), Error);         // wrong size
  a.coll = Coll::Broadcast;
  EXPECT_THROW(algo::buildTree(a), Error);
}

// Host layouts: one rank per host, several per host, uneven, interleaved ids.
std::vector<std::vector<int>> hostLayouts(int n) {
  std::vector<std::vector<int>> out;
  std::vector<int> one, two, four, uneven, interleaved;
  for (int r = 0; r < n; r++) {
    one.push_back(r);
    two.push_back(r / 2);
    four.push_back(r / 4);
    uneven.push_back(r < 3 ? 0 : (r < 4 ? 1 : 2 + (r - 4) / 3));
    interleaved.push_back(r % 3 * 100);
  }
  return {one, two, four, uneven, interleaved};
}

TEST(DoubleTree, AllReduceVerified) {
  for (int n : rankSpread())
    for (const auto& hosts : hostLayouts(n))
      for (uint64_t count : {uint64_t(1), uint64_t(n) + 1, uint64_t(1009)})
        for (int ch : {1, 2}) {
          algo::CollArgs a;
          a.nranks = n;
          a.count = count;
          a.nChannels = ch;
          a.geometry = tinyFifo();
          a.hostOf = hosts;
          expectVerified(algo::buildDoubleTree, a, "double tree");
          if (HasFatalFailure()) return;
        }
}

TEST(DoubleTree, LargeCountDefaultSlots) {
  algo::CollArgs a;
  a.nranks = 8;
  a.count = 2'000'003;
  a.nChannels = 2;
  std::vector<int> hosts = {0, 0, 1, 1, 2, 2, 3, 3};
  a.hostOf = hosts;
  expectVerified(algo::buildDoubleTree, a, "double tree");
}

TEST(DoubleTree, RanksAreInteriorInAtMostOneTreeWhenAloneOnTheirHost) {
  // Even n: no rank is interior in both trees. Odd n (shifted tree): only
  // the shared rank 0 may be.
  for (int n = 2; n <= 128; n++) {
    std::vector<int> hosts;
    for (int r = 0; r < n; r++) hosts.push_back(r);
    auto parents = algo::doubleTreeParents(hosts);
    for (int r = 0; r < n; r++) {
      bool interior0 = !algo::treeLinks(parents[0], r).children.empty();
      bool interior1 = !algo::treeLinks(parents[1], r).children.empty();
      if (n % 2 == 0 || r != 0) {
        EXPECT_FALSE(interior0 && interior1) << "n=" << n << " rank " << r;
      }
    }
  }
}

TEST(DoubleTree, ChainsInsideHostsAndAtMostTwoChildren) {
  std::vector<int> hosts = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  auto parents = algo::doubleTreeParents(hosts);
  for (int t = 0; t < 2; t++) {
    int crossHost = 0;
    for (int r = 0; r < 12; r++) {
      EXPECT_LE(algo::treeLinks(parents[t], r).children.size(), 2u);
      int p = parents[t][r];
      if (p >= 0 && hosts[p] != hosts[r]) crossHost++;
    }
    EXPECT_EQ(crossHost, 2) << "tree " << t << ": one link per non-root host";
  }
  // Tree 1 runs the chains the other way.
  EXPECT_EQ(parents[0][1], 0);
  EXPECT_EQ(parents[1][0], 1);
}

// The double tree's busiest host against 2B at the slowest NIC: hosts alike
// give 1 (a host interior in one tree carries 2B; on 3 hosts 1.5B), two hosts 2 (each a root
// with one child and a leaf: B), and a slow host that is a leaf in one tree
// and a root with one child in the other carries B, so it halves its cost;
// one that is interior in a tree does not.
TEST(DoubleTree, NetScaleFollowsTheBusiestHost) {
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({}), 1);
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({5}), 1);
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({5, 5}), 2);
  for (int hosts : {4, 8, 64}) EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale(std::vector<double>(size_t(hosts), 12.5)), 1);
  // 3 hosts: the busiest carries three halves (1.5B).
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({12.5, 12.5, 12.5}), 4.0 / 3);
  // 4 hosts: tree 0 is 0 <- 2 <- {1, 3}, tree 1 is 3 <- 1 <- {2, 0}.
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({12.5, 12.5, 12.5, 5}), 2.0);   // busiest: host 3 (B / 5) against 2B / 5
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({5, 12.5, 12.5, 12.5}), 2.0);   // host 0 alike
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({12.5, 12.5, 5, 12.5}), 1.0);   // host 2 carries 2B
  // Unknown NICs leave the model as it is.
  EXPECT_DOUBLE_EQ(algo::doubleTreeNetScale({12.5, 0, 5, 12.5}), 1.0);
}

}  // namespace
}  // namespace weft::test
