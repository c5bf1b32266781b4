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

std::vector<plan::Plan> plans(algo::AlgoId a, plan::Coll c, const std::vector<int>& hostOf, uint64_t count) {
  algo::CollArgs args;
  args.coll = c;
  args.nranks = int(hostOf.size());
  args.count = count;
  args.hostOf = hostOf;
  std::vector<plan::Plan> out;
  for (int r = 0; r < args.nranks; r++) {
    args.rank = r;
    out.push_back(algo::algoInfo(a).build(args));
  }
  return out;
}

sim::Cluster cluster(int hosts, int perHost) {
  sim::Cluster c;
  for (int h = 0; h < hosts; h++) c.hostOf.insert(c.hostOf.end(), size_t(perHost), h);
  c.intraGBs = 100;
  c.intraLatUs = 1;
  c.nicGBs = 10;
  c.netLatUs = 10;
  return c;
}

TEST(SimFlowModel, RingAllReduceFollowsTheBandwidthTerm) {
  const sim::Cluster c = cluster(4, 1);
  const uint64_t count = 64 << 20;  // 256 MiB of floats
  const sim::RunStats st = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, count), c);
  const double bytes = double(count) * 4;
  const double formulaUs = 2.0 * 3 / 4 * bytes / (c.nicGBs * 1e3);
  EXPECT_GT(st.us, formulaUs * 0.95);
  EXPECT_LT(st.us, formulaUs * 1.15);
  EXPECT_EQ(st.netBytes, uint64_t(2.0 * 3 / 4 * bytes * 4));  // every rank sends 2(n-1)/n of the buffer
}

TEST(SimFlowModel, HierarchicalBeatsTheFlatRingAcrossHosts) {
  sim::Cluster c = cluster(4, 8);
  const uint64_t count = 16 << 20;
  const auto ring = sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, count), c);
  const auto hier = sim::simulate(plans(algo::kHier, plan::Coll::AllReduce, c.hostOf, count), c);
  // One NIC: the network carries 2(H-1)/H of the data, not 2(n-1)/n.
  EXPECT_LT(hier.us, ring.us * 0.9) << "hier " << hier.us << " us, ring " << ring.us << " us";
  c.nicsPerHost = 8;  // one NIC per rail: the rails run side by side
  const auto railed = sim::simulate(plans(algo::kHier, plan::Coll::AllReduce, c.hostOf, count), c);
  EXPECT_LT(railed.us, hier.us * 0.5);
  // Deterministic.
  EXPECT_EQ(sim::simulate(plans(algo::kHier, plan::Coll::AllReduce, c.hostOf, count), c).us, railed.us);
}

TEST(SimFlowModel, RefusesPlansThatDoNotPair) {
  const sim::Cluster c = cluster(2, 2);
  auto p = plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, 1000);
  p[1].channels[0].steps.pop_back();
  EXPECT_THROW(sim::simulate(p, c), Error);
  sim::Cluster wrong = c;
  wrong.hostOf.pop_back();
  EXPECT_THROW(sim::simulate(plans(algo::kRing, plan::Coll::AllReduce, c.hostOf, 1000), wrong), Error);
}

}  // namespace
}  // namespace weft::test
