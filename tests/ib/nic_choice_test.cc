// Which ports a rank uses: closest to its GPU or NUMA node, spread by local
// rank, several over the channels (nic_choice.h), with distances read from
// recorded topologies (nic_locality.h).
#include <gtest/gtest.h>

#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "transports/ib/nic_choice.h"
#include "transports/ib/nic_locality.h"

namespace weft::ib {
namespace {

constexpr auto IB = LinkLayer::InfiniBand;
constexpr auto RoCE = LinkLayer::Ethernet;
constexpr auto Pix = PciDistance::Pix;
constexpr auto Sys = PciDistance::Sys;

NicChoiceInput input(std::vector<NicCandidate> ports, int localRank = 0, int maxNics = 0) {
  NicChoiceInput in;
  in.ports = std::move(ports);
  in.locality = "GPU 0";
  in.localRank = localRank;
  in.maxNics = maxNics;
  return in;
}

TEST(NicChoice, ClosestPortWinsOverFasterFartherOne) {
  // The decision lists the fastest first: speed alone would take mlx5_0.
  auto in = input({{"mlx5_0:1", IB, 400000, Sys}, {"mlx5_1:1", IB, 200000, Pix}});
  for (int local = 0; local < 4; ++local) {
    in.localRank = local;
    NicChoice c = chooseNics(in);
    ASSERT_EQ(c.rails, std::vector<int>{1}) << local;
    EXPECT_NE(c.reason.find("GPU 0 is PIX from 1 port(s) (mlx5_1:1)"), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("1 farther"), std::string::npos) << c.reason;
  }
}

TEST(NicChoice, RanksSharingPortsSpreadByLocalRankAndUseThemAsRails) {
  auto in = input({{"a:1", IB, 200000, Pix}, {"b:1", IB, 200000, Pix}, {"c:1", IB, 200000, Sys}});
  EXPECT_EQ(chooseNics(in).rails, (std::vector<int>{0, 1}));
  in.localRank = 1;
  NicChoice c = chooseNics(in);
  EXPECT_EQ(c.rails, (std::vector<int>{1, 0}));
  EXPECT_NE(c.reason.find("local rank 1 starts at b:1"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("2 rails"), std::string::npos) << c.reason;
  // Channels alternate over the rails.
  EXPECT_EQ(nicForChannel(c, 0), 1);
  EXPECT_EQ(nicForChannel(c, 1), 0);
  EXPECT_EQ(nicForChannel(c, 2), 1);
}

TEST(NicChoice, CapLimitsRailsButKeepsTheSpread) {
  auto in = input({{"a:1", IB, 1, Pix}, {"b:1", IB, 1, Pix}, {"c:1", IB, 1, Pix}, {"d:1", IB, 1, Pix}}, 0, 1);
  std::vector<int> first;
  for (int local = 0; local < 4; ++local) {
    in.localRank = local;
    NicChoice c = chooseNics(in);
    ASSERT_EQ(c.rails.size(), 1u);
    first.push_back(c.rails[0]);
    EXPECT_NE(c.reason.find("capped by WEFT_IB_MAX_NICS=1"), std::string::npos) << c.reason;
  }
  EXPECT_EQ(first, (std::vector<int>{0, 1, 2, 3}));
  in.maxNics = 2;
  in.localRank = 3;
  EXPECT_EQ(chooseNics(in).rails, (std::vector<int>{3, 0}));
}

TEST(NicChoice, UnknownDistancesRankAfterSysAndAllUnknownSpreadOverAll) {
  auto in = input({{"a:1", IB, 1, std::nullopt}, {"b:1", IB, 1, Sys}});
  EXPECT_EQ(chooseNics(in).rails, std::vector<int>{1});
  in = input({{"a:1", IB, 1, std::nullopt}, {"b:1", IB, 1, std::nullopt}}, 1, 1);
  NicChoice c = chooseNics(in);
  EXPECT_EQ(c.rails, std::vector<int>{1});
  EXPECT_NE(c.reason.find("at an unknown distance"), std::string::npos) << c.reason;
}

TEST(NicChoice, OneLinkLayerAndOneSpeedPerRank) {
  // Equally close RoCE and IB ports: the first (fastest) decides the kind.
  auto in = input({{"ib:1", IB, 200000, Pix}, {"roce:1", RoCE, 200000, Pix}, {"ib:2", IB, 100000, Pix}});
  for (int local = 0; local < 3; ++local) {
    in.localRank = local;
    NicChoice c = chooseNics(in);
    EXPECT_EQ(c.rails, std::vector<int>{0}) << local;
    EXPECT_EQ(c.linkLayer, IB);
  }
  // The link layer does not depend on the local rank (it is published before
  // the ranks know their place on the host).
  in = input({{"r0:1", RoCE, 1, Pix}, {"r1:1", RoCE, 1, Pix}, {"i0:1", IB, 1, Sys}}, 1);
  EXPECT_EQ(chooseNics(in).linkLayer, RoCE);
}

TEST(NicChoice, BadInputIsAnError) {
  EXPECT_THROW(chooseNics(input({})), Error);
  EXPECT_THROW(chooseNics(input({{"a:1", IB, 1, Pix}}, -1)), Error);
  EXPECT_THROW(chooseNics(input({{"a:1", IB, 1, Pix}}, 0, -2)), Error);
  EXPECT_THROW(nicForChannel(NicChoice{}, 0), Error);
}

std::vector<PortState> ports(std::initializer_list<const char*> devs) {
  std::vector<PortState> out;
  for (const char* d : devs) {
    PortState p;
    p.dev = d;
    p.port = 1;
    p.linkLayer = RoCE;
    p.speedMbps = 100000;
    p.active = true;
    out.push_back(p);
  }
  return out;
}

NicChoice chooseFor(const NicDistances& d, const std::vector<PortState>& ps, int localRank) {
  NicChoiceInput in;
  in.locality = d.locality;
  in.localRank = localRank;
  for (size_t i = 0; i < ps.size(); ++i) in.ports.push_back({ps[i].dev, ps[i].linkLayer, ps[i].speedMbps, d.distance[i]});
  return chooseNics(in);
}

std::string topoFile(const char* name) { return std::string(WEFT_TOPO_DATA_DIR) + "/" + name; }

TEST(NicLocality, RecordedPcieBoxGpuTakesTheNicOnItsSwitch) {
  topo::System sys = topo::loadFile(topoFile("pcie-2socket-4gpu-2nic.json"));
  // Sorted by speed alone (equal here) rank % 2 would put GPU 1 on mlx5_1,
  // across the SMP link.
  auto ps = ports({"mlx5_0", "mlx5_1"});
  NicDistances d0 = nicDistances(&sys, 0, 1, -1, ps);
  EXPECT_EQ(d0.distance[0], PciDistance::Pix);
  EXPECT_EQ(d0.distance[1], PciDistance::Sys);
  EXPECT_EQ(chooseFor(d0, ps, 1).rails, std::vector<int>{0});
  NicDistances d3 = nicDistances(&sys, 0, 3, -1, ps);
  EXPECT_EQ(chooseFor(d3, ps, 2).rails, std::vector<int>{1});
  EXPECT_EQ(d3.locality, "GPU 3");
}

TEST(NicLocality, HostRankUsesItsNumaNode) {
  topo::System sys = topo::loadFile(topoFile("pcie-2socket-4gpu-2nic.json"));
  auto ps = ports({"mlx5_0", "mlx5_1"});
  NicDistances d = nicDistances(&sys, 0, -1, 1, ps);
  EXPECT_EQ(d.locality, "NUMA node 1");
  EXPECT_EQ(d.distance[0], PciDistance::Sys);
  EXPECT_EQ(d.distance[1], PciDistance::Phb);
  NicChoice c = chooseFor(d, ps, 0);
  EXPECT_EQ(c.rails, std::vector<int>{1});
  EXPECT_NE(c.reason.find("NUMA node 1 is PHB from 1 port(s) (mlx5_1)"), std::string::npos) << c.reason;
  // Unknown NUMA node, no topology, a port the topology lacks: unknown.
  NicDistances none = nicDistances(&sys, 0, -1, -1, ps);
  EXPECT_FALSE(none.distance[0].has_value());
  NicDistances noTopo = nicDistances(nullptr, 0, 2, -1, ps);
  EXPECT_FALSE(noTopo.distance[1].has_value());
  NicDistances missing = nicDistances(&sys, 0, 0, -1, ports({"mlx5_9"}));
  EXPECT_FALSE(missing.distance[0].has_value());
}

TEST(NicLocality, RecordedDgxEveryGpuGetsANicOnItsOwnSwitch) {
  topo::System sys = topo::loadFile(topoFile("dgx-8gpu-nvswitch-8nic.json"));
  auto ps = ports({"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"});
  std::vector<int> uses(ps.size(), 0);
  for (int gpu = 0; gpu < 8; ++gpu) {
    NicDistances d = nicDistances(&sys, 0, gpu, -1, ps);
    NicChoice c = chooseFor(d, ps, gpu);
    ASSERT_FALSE(c.rails.empty());
    EXPECT_LE(static_cast<int>(*d.distance[c.rails[0]]), static_cast<int>(PciDistance::Pxb)) << c.reason;
    ++uses[c.rails[0]];
  }
  // Eight GPUs, eight NICs: each NIC is the primary of exactly one rank.
  for (size_t i = 0; i < uses.size(); ++i) EXPECT_EQ(uses[i], 1) << ps[i].dev;
}

}  // namespace
}  // namespace weft::ib
