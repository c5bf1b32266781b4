// The flow model on plans from the real builders: a ring's time follows
// the bandwidth formula, hierarchical rings beat the flat ring across hosts
// with fast links inside them, runs are deterministic, and plans that do not
// pair are refused.
#include <gtest/gtest.h>

#include "algorithms/registry.h"
#include "src/sim/flow_model.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

std::vector<plan::Plan> plans(algo::AlgoId a, plan::Coll c, const std::vector<int>& hostOf, uint64_t count,
                              int channels = 1) {
  algo::CollArgs args;
  args.coll = c;
  args.nranks = int(hostOf.size());
  args.count = count;
  args.nChannels = channels;
  args.hostOf = hostOf;
  std::vector<plan::Plan> out;
  for (int r = 0; r < args.nranks; r++) {
    args.rank = r;
    out.push_back(algo::algoInfo(a).build(args));
  }
  return out;
}

sim::SimpleCluster simpleCluster(int hosts, int perHost) {
  sim::SimpleCluster s;
  s.layout.assign(size_t(hosts), perHost);
  s.intraGBs = 100;
  s.intraLatUs = 1;
  s.nicGBs = 10;
  s.netLatUs = 10;
  return s;
}

sim::Cluster cluster(int hosts, int perHost) { return sim::buildCluster(simpleCluster(hosts, perHost)); }

TEST(SimFlowModel, RingAllReduceFollowsTheBandwidthTerm) {
  const sim::Cluster c = cluster(4, 1);
  const uint64_t count = 64 << 20;  // 256 MiB of floats
  const sim::RunStats st = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, count), c);
  const double bytes = double(count) * 4;
  const double formulaUs = 2.0 * 3 / 4 * bytes / (10 * 1e3);
  EXPECT_GT(st.us, formulaUs * 0.95);
  EXPECT_LT(st.us, formulaUs * 1.15);
  EXPECT_EQ(st.netBytes, uint64_t(2.0 * 3 / 4 * bytes * 4));  // every rank sends 2(n-1)/n of the buffer
}

TEST(SimFlowModel, HierarchicalBeatsTheFlatRingAcrossHosts) {
  sim::SimpleCluster s = simpleCluster(4, 8);
  sim::Cluster c = sim::buildCluster(s);
  const uint64_t count = 16 << 20;
  const auto ring = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, count), c);
  const auto hier = sim::simulate(plans(algo::kHier, plan::Coll::AllReduce, c.hostOf, count), c);
  // One NIC: the network carries 2(H-1)/H of the data, not 2(n-1)/n.
  EXPECT_LT(hier.us, ring.us * 0.9) << "hier " << hier.us << " us, ring " << ring.us << " us";
  s.nicsPerHost = 8;  // one NIC per rail: the rails run side by side
  c = sim::buildCluster(s);
  const auto railed = sim::simulate(plans(algo::kHier, plan::Coll::AllReduce, c.hostOf, count), c);
  EXPECT_LT(railed.us, hier.us * 0.5);
  // Deterministic.
  EXPECT_EQ(sim::simulate(plans(algo::kHier, plan::Coll::AllReduce, c.hostOf, count), c).us, railed.us);
}

// Rank 0 sends `bytes[k]` to rank k + 1 on channel k (so that each
// receiver's end depends on its own flow alone); every other rank receives.
std::vector<plan::Plan> fanOut(int n, const std::vector<uint64_t>& elems) {
  std::vector<plan::Plan> out(static_cast<size_t>(n));
  for (int r = 0; r < n; r++) {
    out[size_t(r)].nranks = n;
    out[size_t(r)].rank = r;
  }
  for (size_t k = 0; k < elems.size(); k++) {
    out[0].channels.push_back({{plan::send(int(k) + 1, plan::Buf::Send, 0, elems[k])}});
    out[k + 1].channels.push_back({{plan::recv(0, plan::Buf::Recv, 0, elems[k])}});
  }
  return out;
}

// Max-min, not equal split: rank 0's NIC (10 GB/s) carries a flow to a host
// behind a 2 GB/s NIC and one to a host behind a 10 GB/s NIC. The first is
// held to 2 GB/s by its own bottleneck, so the second gets the other 8, and
// with four times the bytes both finish together.
TEST(SimFlowModel, LinksAreSharedMaxMinFairly) {
  sim::SimpleCluster s = simpleCluster(3, 1);
  s.netLatUs = 0;
  sim::Cluster c = sim::buildCluster(s);
  c.linkGBs[size_t(c.nicDown[1])] = 2;
  const uint64_t elems = 1 << 20;  // 4 MB
  const auto st = sim::simulate(fanOut(3, {elems, 4 * elems}), c);
  const double expectUs = 4.0 * elems / (2 * 1e3);  // both at their share until the end
  EXPECT_NEAR(st.us, expectUs, expectUs * 0.01);
  // Two flows through one 10 GB/s link and nothing else: half each.
  c.linkGBs[size_t(c.nicDown[1])] = 10;
  const auto even = sim::simulate(fanOut(3, {elems, elems}), c);
  EXPECT_NEAR(even.us, 2 * 4.0 * elems / 1e4, 4.0 * elems / 1e4 * 0.01);
  EXPECT_EQ(even.netBytes, 2 * 4 * elems);
}

// Per-hop latency adds up along the route, and each step pays the
// per-step overhead.
TEST(SimFlowModel, LatencyAndStepOverheadAddUp) {
  sim::SimpleCluster s = simpleCluster(2, 1);
  s.netLatUs = 7;
  s.stepOverheadUs = 3;
  sim::Cluster c = sim::buildCluster(s);
  c.linkLatUs[size_t(c.nicDown[1])] = 2;  // a second hop
  const auto st = sim::simulate(fanOut(2, {1}), c);
  EXPECT_NEAR(st.us, 3 + 4.0 / 1e4 + 7 + 2, 1e-3);  // overhead, 4 bytes at 10 GB/s, two hops
}

// 128 ranks of double trees (whole-buffer streams, two of them crossing a
// NIC): fair sharing keeps them near the ring instead of serialising them.
TEST(SimFlowModel, DoubleTreeAtScaleStaysNearTheRing) {
  const sim::Cluster c = cluster(32, 4);
  const uint64_t count = 16 << 20;
  const auto ring = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, count), c);
  const auto tree = sim::simulate(plans(algo::kDoubleTree, plan::Coll::AllReduce, c.hostOf, count), c);
  EXPECT_LT(tree.us, ring.us * 2.5) << "tree " << tree.us << " us, ring " << ring.us << " us";
  EXPECT_GT(tree.us, ring.us * 0.5);
}

// Each connection (channel) leaves through the NIC the IB transport gives
// it: local rank l starts at NIC l mod K, channel c on (l + c) mod K. A flat
// ring on 4 hosts with 4 NICs each then runs 4 channels side by side; on
// one NIC per host they share it.
TEST(SimFlowModel, ChannelsLeaveThroughTheirOwnNics) {
  sim::SimpleCluster s = simpleCluster(4, 2);
  s.nicsPerHost = 4;
  const sim::Cluster c = sim::buildCluster(s);
  EXPECT_EQ(c.nicOf(1, 0), 1);  // host 0: NICs 0..3
  EXPECT_EQ(c.nicOf(1, 1), 2);
  EXPECT_EQ(c.nicOf(1, 3), 0);
  EXPECT_EQ(c.nicOf(2, 5), 4 + 1);  // host 1, local rank 0, channel 5 -> NIC 1
  const sim::Cluster flat = cluster(4, 1);
  const uint64_t count = 16 << 20;
  const auto one = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, flat.hostOf, count, 1), flat);
  const auto shared = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, flat.hostOf, count, 4), flat);
  sim::SimpleCluster rails = simpleCluster(4, 1);
  rails.nicsPerHost = 4;
  const sim::Cluster four = sim::buildCluster(rails);
  const auto spread = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, four.hostOf, count, 4), four);
  EXPECT_GT(shared.us, one.us * 0.9) << "4 channels on one NIC";
  EXPECT_LT(spread.us, one.us / 3) << "4 channels on 4 NICs: " << spread.us << " us, 1 channel " << one.us << " us";
}

TEST(SimFlowModel, RefusesPlansThatDoNotPair) {
  const sim::Cluster c = cluster(2, 2);
  auto p = plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, 1000);
  p[1].channels[0].steps.pop_back();
  EXPECT_THROW(sim::simulate(p, c), Error);
  sim::Cluster wrong = c;
  wrong.hostOf.pop_back();
  EXPECT_THROW(sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, 1000), wrong), Error);
  sim::Cluster zero = c;
  zero.linkGBs[0] = 0;
  EXPECT_THROW(sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, 1000), zero), Error);
}

}  // namespace
}  // namespace weft::test
