// Topology files as simulator clusters: switches with an oversubscribed
// uplink, NIC speeds, ranks per host, TCP fallback; and bad files refused
// with an error naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "algorithms/registry.h"
#include "src/sim/flow_model.h"
#include "src/sim/topo_cluster.h"
#include "src/util/error.h"

namespace weft::test {
namespace {

using Json = nlohmann::json;

// `hosts` hosts of `gpus` GPUs on NVSwitch (100 GB/s each) and one 100 Gb/s
// NIC each; two hosts per top-of-rack switch, the racks' switches joined
// through a spine by `uplinkGBs` links.
Json clusterJson(int hosts, int gpus, double uplinkGBs) {
  Json doc = {{"weft_topology", 1}, {"hosts", Json::array()}};
  Json net = {{"switches", Json::array()}, {"links", Json::array()}};
  net["switches"].push_back({{"id", "spine"}, {"kind", "net_switch"}});
  for (int h = 0; h < hosts; h++) {
    const std::string tor = "tor" + std::to_string(h / 2);
    if (h % 2 == 0) {
      net["switches"].push_back({{"id", tor}, {"kind", "net_switch"}});
      net["links"].push_back({{"a", "net/" + tor}, {"b", "net/spine"}, {"kind", "net"}, {"bw", uplinkGBs}});
    }
    Json host = {{"name", "h" + std::to_string(h)}, {"nodes", Json::array()}, {"links", Json::array()}};
    host["nodes"].push_back({{"id", "cpu0"}, {"kind", "cpu"}, {"numa", 0}});
    host["nodes"].push_back({{"id", "nvs"}, {"kind", "nvswitch"}});
    for (int g = 0; g < gpus; g++) {
      const std::string id = "gpu" + std::to_string(g);
      host["nodes"].push_back({{"id", id}, {"kind", "gpu"}, {"cuda_dev", g}, {"sm", 80}});
      host["links"].push_back({{"a", id}, {"b", "nvs"}, {"kind", "nvlink"}, {"bw", 100}});
      host["links"].push_back({{"a", "cpu0"}, {"b", id}, {"kind", "pci"}, {"bw", 24}});
    }
    host["nodes"].push_back({{"id", "nic0"}, {"kind", "nic"}, {"speed_gbps", 100}, {"up", true}});
    host["links"].push_back({{"a", "cpu0"}, {"b", "nic0"}, {"kind", "pci"}, {"bw", 24}});
    net["links"].push_back({{"a", "h" + std::to_string(h) + "/nic0"}, {"b", "net/" + tor}, {"kind", "net"}});
    doc["hosts"].push_back(host);
  }
  doc["network"] = net;
  return doc;
}

std::string errorOf(const Json& doc) {
  try {
    sim::topoClusterFromString(doc.dump());
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

double ringUs(const sim::Cluster& c, uint64_t count) {
  algo::CollArgs args;
  args.coll = plan::Coll::AllReduce;
  args.nranks = int(c.hostOf.size());
  args.count = count;
  args.hostOf = c.hostOf;
  std::vector<plan::Plan> plans;
  for (int r = 0; r < args.nranks; r++) {
    args.rank = r;
    plans.push_back(algo::algoInfo(algo::kRing).build(args));
  }
  return sim::simulate(plans, c).us;
}

TEST(SimTopoCluster, ReadsSwitchesNicSpeedsAndRanksPerHost) {
  Json doc = clusterJson(4, 2, 100);
  doc["simulation"] = {{"ranks_per_host", {2, 1, 2, 2}}, {"step_us", 1.5}, {"net_hop_latency_us", 2}};
  const sim::TopoCluster t = sim::topoClusterFromString(doc.dump());
  EXPECT_EQ(t.layout, (std::vector<int>{2, 1, 2, 2}));
  EXPECT_EQ(t.cluster.hostOf, (std::vector<int>{0, 0, 1, 2, 2, 3, 3}));
  EXPECT_EQ(t.cluster.stepOverheadUs, 1.5);
  EXPECT_DOUBLE_EQ(t.summary.nicGBs, 12.5);   // 100 Gb/s
  EXPECT_DOUBLE_EQ(t.summary.intraGBs, 100);  // the GPU's NVLink
  // Rack 0 to rack 1: NIC up, tor0 -> spine -> tor1, NIC down; 2 us a hop.
  std::vector<int> links;
  t.cluster.route(0, 3, 0, &links);
  EXPECT_EQ(links.size(), 4u);
  EXPECT_DOUBLE_EQ(t.summary.netLatUs, 3 * 2.0);
  links.clear();
  t.cluster.route(0, 2, 0, &links);  // same rack: no spine
  EXPECT_EQ(links.size(), 2u);
}

// An uplink of a tenth of a NIC: the ring's flows between racks share it,
// and the ring runs at the uplink's pace.
TEST(SimTopoCluster, OversubscribedUplinkSlowsTheRing) {
  const auto fast = sim::topoClusterFromString(clusterJson(4, 1, 100).dump());
  const auto slow = sim::topoClusterFromString(clusterJson(4, 1, 1.25).dump());
  const uint64_t count = 4 << 20;
  const double f = ringUs(fast.cluster, count), s = ringUs(slow.cluster, count);
  EXPECT_GT(s, f * 5) << "fast " << f << " us, slow " << s << " us";
}

// One host, two sockets joined by an SMP link of `smpGBs`, two GPUs on a
// PCI switch under each (24 GB/s links): GPUs of one socket are
// peer-to-peer, the others meet through host memory.
Json twoSocketJson(double smpGBs) {
  Json host = {{"name", "box"}, {"nodes", Json::array()}, {"links", Json::array()}};
  for (int s = 0; s < 2; s++) {
    const std::string cpu = "cpu" + std::to_string(s), sw = "sw" + std::to_string(s);
    host["nodes"].push_back({{"id", cpu}, {"kind", "cpu"}, {"numa", s}, {"package", s}});
    host["nodes"].push_back({{"id", sw}, {"kind", "pci_switch"}, {"numa", s}});
    host["links"].push_back({{"a", cpu}, {"b", sw}, {"kind", "pci"}, {"bw", 24}});
    for (int g = 2 * s; g < 2 * s + 2; g++) {
      const std::string id = "gpu" + std::to_string(g);
      host["nodes"].push_back({{"id", id}, {"kind", "gpu"}, {"cuda_dev", g}, {"sm", 80}, {"numa", s}});
      host["links"].push_back({{"a", sw}, {"b", id}, {"kind", "pci"}, {"bw", 24}});
    }
  }
  host["links"].push_back({{"a", "cpu0"}, {"b", "cpu1"}, {"kind", "smp"}, {"bw", smpGBs}});
  return {{"weft_topology", 1}, {"hosts", Json::array({host})}};
}

// GPUs that are not peer-to-peer cross the sockets' link (through pinned
// host memory), shared by every pair that crosses it; peers on one switch
// do not. Without it the ring ran at the GPUs' 24 GB/s whatever the SMP
// link's speed.
TEST(SimTopoCluster, GpusAcrossSocketsShareTheSmpLink) {
  const auto slow = sim::topoClusterFromString(twoSocketJson(6).dump());
  const auto fast = sim::topoClusterFromString(twoSocketJson(100).dump());
  std::vector<int> links;
  slow.cluster.route(1, 2, 0, &links);  // gpu1 -> gpu2: up sw0, across, down sw1
  ASSERT_EQ(links.size(), 5u);
  EXPECT_DOUBLE_EQ(slow.cluster.linkGBs[size_t(links[2])], 6);
  links.clear();
  slow.cluster.route(0, 1, 0, &links);  // gpu0 -> gpu1: one switch, peer-to-peer
  EXPECT_EQ(links.size(), 2u);
  const uint64_t count = 4 << 20;
  const double s = ringUs(slow.cluster, count), f = ringUs(fast.cluster, count);
  EXPECT_GT(s, f * 2.5) << "fast " << f << " us, slow " << s << " us";
  EXPECT_NO_THROW(sim::validate(slow.cluster));
}

TEST(SimTopoCluster, DegradedHostsRunTheirNicsSlower) {
  Json doc = clusterJson(4, 1, 100);
  doc["simulation"] = {{"degraded", {{{"host", "h2"}, {"fraction", 0.25}, {"latency_us", 20}}}}};
  const auto t = sim::topoClusterFromString(doc.dump());
  EXPECT_DOUBLE_EQ(t.summary.nicGBs, 12.5 * 0.25);
  const auto healthy = sim::topoClusterFromString(clusterJson(4, 1, 100).dump());
  EXPECT_GT(ringUs(t.cluster, 4 << 20), ringUs(healthy.cluster, 4 << 20) * 3);
  doc["simulation"]["degraded"][0]["host"] = "nobody";
  EXPECT_NE(errorOf(doc).find("simulation.degraded: no host named 'nobody'"), std::string::npos) << errorOf(doc);
  doc["simulation"]["degraded"][0] = {{"host", "*"}, {"fraction", 0}};
  EXPECT_NE(errorOf(doc).find("simulation.degraded[0].fraction must be above 0"), std::string::npos) << errorOf(doc);
}

TEST(SimTopoCluster, UnknownFieldsAreNamed) {
  Json doc = clusterJson(2, 1, 100);
  doc["simulation"] = {{"ranks_per_hots", 1}};
  EXPECT_NE(errorOf(doc).find("simulation: unknown member 'ranks_per_hots'"), std::string::npos) << errorOf(doc);
  doc = clusterJson(2, 1, 100);
  doc["hosts"][0]["nodes"][0]["coers"] = 4;
  EXPECT_NE(errorOf(doc).find("coers"), std::string::npos) << errorOf(doc);
  doc = clusterJson(2, 1, 100);
  doc["simulation"] = {{"degraded", {{{"host", "h0"}, {"fraction", 0.5}, {"speed", 1}}}}};
  EXPECT_NE(errorOf(doc).find("simulation.degraded[0]: unknown member 'speed'"), std::string::npos) << errorOf(doc);
}

TEST(SimTopoCluster, DisconnectedHostsAreNamed) {
  Json doc = clusterJson(4, 1, 100);
  doc["network"]["links"].erase(doc["network"]["links"].size() - 1);  // h3's NIC cable
  EXPECT_NE(errorOf(doc).find("host 'h3' is disconnected"), std::string::npos) << errorOf(doc);
  doc = clusterJson(4, 1, 100);
  doc["network"]["links"].erase(3);  // tor1's uplink: h2 and h3 reach nobody else
  EXPECT_NE(errorOf(doc).find("host 'h2' is disconnected"), std::string::npos) << errorOf(doc);
}

TEST(SimTopoCluster, ZeroBandwidthIsNamed) {
  Json doc = clusterJson(2, 1, 0);
  EXPECT_NE(errorOf(doc).find("net/tor0-net/spine has bw <= 0"), std::string::npos) << errorOf(doc);
  doc = clusterJson(2, 1, 100);
  doc["simulation"] = {{"intra_gbs", 0}};
  EXPECT_NE(errorOf(doc).find("simulation.intra_gbs must be above 0"), std::string::npos) << errorOf(doc);
}

TEST(SimTopoCluster, MoreRanksThanGpusIsNamed) {
  Json doc = clusterJson(2, 2, 100);
  doc["simulation"] = {{"ranks_per_host", 3}};
  EXPECT_NE(errorOf(doc).find("simulation.ranks_per_host: 3 ranks on host 'h0', which has 2 GPUs"), std::string::npos)
      << errorOf(doc);
  doc["simulation"] = {{"ranks_per_host", {1, 1, 1}}};
  EXPECT_NE(errorOf(doc).find("simulation.ranks_per_host has 3 entries for 2 hosts"), std::string::npos)
      << errorOf(doc);
}

}  // namespace
}  // namespace weft::test
