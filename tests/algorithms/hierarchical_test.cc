// The hierarchical algorithm (hier, and its AllReduce with a tree per rail,
// buildHierarchicalTree) through the symbolic verifier: every rank count
// 1..128 with 1, 2, 4 and 8 ranks per host (the last host short when the
// count does not divide), hosts whose ranks are not contiguous in rank
// numbers (the ring order, as the topology gives it, groups them), and
// uneven hosts; plus what its plans send over the network and how the
// cost model ranks it.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "algorithms/double_tree.h"
#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/util/error.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Coll;

// Counts around n and a prime that divides nothing; ReduceScatter and
// AllGather counts are per rank (one element: small rank counts only, where
// it costs little).
std::vector<uint64_t> countsFor(int n, Coll c) {
  if (c == Coll::AllReduce) return {1, uint64_t(n) + 1, 1009};
  if (n <= 16) return {1, 13};
  return {13};
}

// Verifies all three collectives on one layout (hostOf and ring order).
void verifyLayout(const std::vector<int>& hostOf, const std::vector<int>& order, const std::string& what) {
  const int n = int(hostOf.size());
  plan::FifoGeometry g;
  g.slotBytes = 256;  // 64 four-byte elements: larger counts span many pieces and loops
  g.nSlots = 4;
  // One channel out of place, two in place: both buffer cases and a
  // channel split at every count, at half the cost of all four.
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather})
    for (uint64_t count : countsFor(n, c))
      for (auto [ch, inPlace] : {std::pair{1, false}, {2, true}}) {
        algo::CollArgs a;
        a.coll = c;
        a.nranks = n;
        a.count = count;
        a.nChannels = ch;
        a.geometry = g;
        a.hostOf = hostOf;
        a.order = order;
        verify::Result r = verify::verify(problemFor(algo::buildHierarchical, a, inPlace));
        ASSERT_TRUE(r.ok) << what << " " << label(a, inPlace) << "\n" << r.text();
        // The tree-per-rail AllReduce (a builder, not registered) on the
        // larger counts, two channels in place.
        if (c != Coll::AllReduce || count == 1 || !inPlace) continue;
        r = verify::verify(problemFor(algo::buildHierarchicalTree, a, inPlace));
        ASSERT_TRUE(r.ok) << "hiertree " << what << " " << label(a, inPlace) << "\n" << r.text();
      }
}

std::vector<int> contiguousHosts(int n, int perHost) {
  std::vector<int> hostOf(n);
  for (int r = 0; r < n; r++) hostOf[r] = r / perHost;
  return hostOf;
}

class HierEveryRankCount : public ::testing::TestWithParam<int> {};

// Also all ranks on one host up to 32 (a plain ring inside it; the
// registry-wide sweep leaves this algorithm to this test).
TEST_P(HierEveryRankCount, VerifiesWith1248RanksPerHost) {
  const int n = GetParam();
  for (int perHost : {1, 2, 4, 8, n})
    if (perHost <= n && (perHost != n || (n > 8 && n <= 32)))
      verifyLayout(contiguousHosts(n, perHost), {}, std::to_string(perHost) + " per host");
}

INSTANTIATE_TEST_SUITE_P(Ranks1To128, HierEveryRankCount, ::testing::ValuesIn(sweepRanks(1, 128, true)));
// Labelled `long` (tests/algorithms/CMakeLists.txt): not in the CI run.
INSTANTIATE_TEST_SUITE_P(Ranks1To128Rest, HierEveryRankCount, ::testing::ValuesIn(sweepRanks(1, 128, false)));

// Rank r on host r % H: a host's ranks are not neighbours in rank order;
// the ring order (hosts in reverse, each host's ranks descending) says
// where they sit, and the plans must follow it.
TEST(Hierarchical, HostsInterleavedInRankOrderFollowTheRingOrder) {
  for (auto [hosts, perHost] : {std::pair{2, 2}, {3, 4}, {4, 8}, {5, 3}}) {
    const int n = hosts * perHost;
    std::vector<int> hostOf(n), order;
    for (int r = 0; r < n; r++) hostOf[r] = r % hosts;
    for (int h = hosts - 1; h >= 0; h--)
      for (int r = n - 1; r >= 0; r--)
        if (hostOf[r] == h) order.push_back(r);
    verifyLayout(hostOf, order, "interleaved " + std::to_string(hosts) + "x" + std::to_string(perHost));
  }
}

TEST(Hierarchical, UnevenHostsVerify) {
  const std::vector<std::vector<int>> layouts = {
      {3, 1}, {1, 3}, {2, 1, 1}, {1, 1, 2}, {5, 3, 8}, {8, 1, 4, 2, 7}, {1, 2, 3, 4, 5, 6, 7, 8}, {8, 8, 8, 1}};
  for (const auto& sizes : layouts) {
    std::vector<int> hostOf;
    std::string what = "hosts";
    for (size_t h = 0; h < sizes.size(); h++) {
      hostOf.insert(hostOf.end(), size_t(sizes[h]), int(h));
      what += " " + std::to_string(sizes[h]);
    }
    verifyLayout(hostOf, {}, what);
  }
}

TEST(Hierarchical, LargeCountsWithDefaultSlots) {
  algo::CollArgs a;
  a.nranks = 8;
  a.hostOf = contiguousHosts(8, 4);
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather}) {
    a.coll = c;
    a.count = c == Coll::AllReduce ? 3'000'017 : 400'003;
    a.nChannels = 2;
    verify::Result r = verify::verify(problemFor(algo::buildHierarchical, a, false));
    ASSERT_TRUE(r.ok) << label(a, false) << "\n" << r.text();
  }
}

// On even hosts, network traffic flows only between ranks of equal local
// index (each on its own rail), and a rank talks to at most two ranks of
// other hosts.
TEST(Hierarchical, NetworkTrafficStaysOnRails) {
  const int n = 32, perHost = 8;
  algo::CollArgs a;
  a.nranks = n;
  a.count = 100'000;
  a.hostOf = contiguousHosts(n, perHost);
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather}) {
    a.coll = c;
    for (int r = 0; r < n; r++) {
      a.rank = r;
      std::set<int> remote;
      for (const auto& ch : algo::buildHierarchical(a).channels)
        for (const auto& s : ch.steps)
          for (int k = 0; k < s.nSend; k++)
            if (a.hostOf[s.sendPeer[k]] != a.hostOf[r]) {
              EXPECT_EQ(s.sendPeer[k] % perHost, r % perHost) << plan::collName(c) << " rank " << r;
              remote.insert(s.sendPeer[k]);
            }
      EXPECT_EQ(remote.size(), 1u) << plan::collName(c) << " rank " << r;  // the next host's rail rank
    }
  }
}

TEST(Hierarchical, HostLayoutGroupsAlongTheRingOrder) {
  algo::CollArgs a;
  a.nranks = 6;
  a.hostOf = {0, 1, 0, 1, 2, 2};
  a.order = {5, 4, 3, 1, 0, 2};
  a.rank = 0;
  const algo::HostLayout lay = algo::hostLayout(a, 0);
  ASSERT_EQ(lay.hosts.size(), 3u);
  EXPECT_EQ(lay.hosts[0], (std::vector<int>{5, 4}));
  EXPECT_EQ(lay.hosts[1], (std::vector<int>{3, 1}));
  EXPECT_EQ(lay.hosts[2], (std::vector<int>{0, 2}));
  EXPECT_EQ(lay.myHost, 2);
  EXPECT_EQ(lay.myLocal, 0);
  EXPECT_EQ(lay.maxLocal, 2);
}

TEST(Hierarchical, BadHostMapIsAnError) {
  algo::CollArgs a;
  a.nranks = 4;
  a.count = 10;
  a.hostOf = {0, 0, 1};
  EXPECT_THROW(algo::buildHierarchical(a), Error);
  a.hostOf = {0, 0, 1, 1};
  a.coll = Coll::Broadcast;
  EXPECT_THROW(algo::buildHierarchical(a), Error);
}

algo::CostInputs clusterInputs(int n, int hosts, uint64_t bytes) {
  algo::CostInputs in;
  in.nranks = n;
  in.nHosts = hosts;
  in.bytes = bytes;
  in.intra = {1.0, 20.0};  // shared memory / NVLink
  in.inter = {20.0, 1.0};  // network
  return in;
}

TEST(Hierarchical, SelectorPicksItAcrossHostsNotOnOne) {
  const algo::AlgoFilter all;
  for (uint64_t bytes : {uint64_t(1) << 20, uint64_t(1) << 28})
    for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather}) {
      EXPECT_EQ(algo::selectAlgo(c, clusterInputs(16, 4, bytes), all), algo::kHier) << plan::collName(c) << bytes;
      EXPECT_NE(algo::selectAlgo(c, clusterInputs(16, 1, bytes), all), algo::kHier) << plan::collName(c) << bytes;
      EXPECT_NE(algo::selectAlgo(c, clusterInputs(16, 16, bytes), all), algo::kHier) << plan::collName(c) << bytes;
    }
  // The network term shrinks with the host's NICs (rails).
  algo::CostInputs in = clusterInputs(16, 4, uint64_t(1) << 28);
  const double oneNic = algo::bytesTermUs(Coll::AllReduce, algo::kHier, in);
  in.nicsPerHost = 4;
  EXPECT_LT(algo::bytesTermUs(Coll::AllReduce, algo::kHier, in), oneNic * 0.5);
  EXPECT_EQ(algo::findAlgo("HIER"), algo::kHier);
}

// The double tree's chains and host links follow the ring order (the
// topology's), not rank numbers: with hosts interleaved in rank order and
// each host's chain given backwards, a chain link joins neighbours of the
// order (tree 1's backwards from the host's middle rank, wrapping from its
// first to its last), and every channel (its own ring order) still verifies.
TEST(DoubleTreeTopologyOrder, ChainsFollowTheRingOrder) {
  const int hosts = 3, perHost = 4, n = hosts * perHost;
  std::vector<int> hostOf(n), order;
  for (int r = 0; r < n; r++) hostOf[r] = r % hosts;
  for (int h = 0; h < hosts; h++)
    for (int r = n - 1; r >= 0; r--)
      if (hostOf[r] == h) order.push_back(r);
  const auto parents = algo::doubleTreeParents(hostOf, order);
  std::vector<int> pos(n);
  for (int i = 0; i < n; i++) pos[order[i]] = i;
  for (int r = 0; r < n; r++) {
    const int p0 = parents[0][r], p1 = parents[1][r];
    if (p0 >= 0 && hostOf[p0] == hostOf[r]) EXPECT_EQ(pos[p0] + 1, pos[r]) << "tree 0, rank " << r;
    if (p1 >= 0 && hostOf[p1] == hostOf[r])
      EXPECT_EQ((pos[p1] % perHost + perHost - 1) % perHost, pos[r] % perHost) << "tree 1, rank " << r;
    // Tree 1's head (its parent on another host, or the root) is the middle of its host's block.
    if (p1 < 0 || hostOf[p1] != hostOf[r]) EXPECT_EQ(pos[r] % perHost, perHost / 2) << "tree 1, rank " << r;
  }
  // The root of tree 0 is the head of the first host in the order.
  EXPECT_EQ(parents[0][order[0]], -1);

  algo::CollArgs a;
  a.coll = Coll::AllReduce;
  a.nranks = n;
  a.hostOf = hostOf;
  a.geometry = tinyFifo();
  std::vector<int> reversed(order.rbegin(), order.rend());
  a.channelOrders = {order, reversed};
  for (uint64_t count : {uint64_t(1), uint64_t(97), uint64_t(1009)})
    for (int ch : {1, 2, 3})
      for (bool inPlace : {false, true}) {
        a.count = count;
        a.nChannels = ch;
        verify::Result r = verify::verify(problemFor(algo::buildDoubleTree, a, inPlace));
        ASSERT_TRUE(r.ok) << label(a, inPlace) << "\n" << r.text();
      }
}

}  // namespace
}  // namespace weft::test
