#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/topology/detect.h"
#include "src/topology/rings.h"

namespace weft::topo {
namespace {

namespace fs = std::filesystem;

TEST(TopoDetect, FindsThisMachine) {
  DetectOptions opts;
  opts.gpus = false;
  opts.hostName = "here";
  System sys = detectLocal(opts);
  ASSERT_EQ(sys.hosts, std::vector<std::string>{"here"});
  auto cpus = sys.nodesOf(NodeKind::Cpu, 0);
  ASSERT_GE(cpus.size(), 1u);
  int cores = 0;
  for (int c : cpus) cores += sys.nodes[c].cores;
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, sysconf(_SC_NPROCESSORS_CONF));
  bool lo = false;
  for (int n : sys.nodesOf(NodeKind::Nic, 0)) {
    const Node& nic = sys.nodes[n];
    EXPECT_FALSE(nic.netdev.empty());
    EXPECT_FALSE(sys.linksOf(n).empty()) << nic.netdev << " is not attached";
    if (nic.netdev == "lo") {
      lo = true;
      EXPECT_EQ(nic.linkLayer, "Loopback");
      EXPECT_TRUE(nic.up);
      EXPECT_NE(std::find(nic.addresses.begin(), nic.addresses.end(), "inet 127.0.0.1"), nic.addresses.end());
      EXPECT_FALSE(usableNic(nic));
    }
  }
  EXPECT_TRUE(lo);
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("weft-fake-sysfs-" + std::to_string(getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& rel, const std::string& content) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << content << "\n";
  }
  fs::path root_;
};

TEST_F(FakeSysfs, ReadsInfinibandAndRocePorts) {
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  fs::path ib = "class/infiniband/mlx5_0/ports";
  write(ib / "1/state", "4: ACTIVE");
  write(ib / "1/rate", "200 Gb/sec (4X HDR)");
  write(ib / "1/link_layer", "InfiniBand");
  write(ib / "1/gids/0", "fe80:0000:0000:0000:0c42:a103:0001:0001");
  write(ib / "1/gids/1", zero);
  write(ib / "1/gid_attrs/types/0", "IB/RoCE v1");
  write(ib / "2/state", "1: DOWN");
  write(ib / "2/rate", "10 Gb/sec (4X SDR)");
  write(ib / "2/link_layer", "InfiniBand");
  fs::path roce = "class/infiniband/mlx5_1/ports/1";
  write(roce / "state", "4: ACTIVE");
  write(roce / "rate", "100 Gb/sec (4X EDR)");
  write(roce / "link_layer", "Ethernet");
  write(roce / "gids/2", "0000:0000:0000:0000:0000:ffff:0a00:0001");
  write(roce / "gid_attrs/types/2", "RoCE v2");
  write(roce / "gid_attrs/ndevs/2", "ens1np0");

  System sys;
  sys.addHost("h");
  Node cpu;
  cpu.id = "cpu0";
  cpu.numa = 0;
  sys.addNode(cpu);
  detail::detectIbPorts(sys, 0, root_.string());

  auto nics = sys.nodesOf(NodeKind::Nic, 0);
  ASSERT_EQ(nics.size(), 3u);
  const Node& p1 = sys.nodes[nics[0]];
  EXPECT_EQ(p1.ibDevice, "mlx5_0");
  EXPECT_EQ(p1.port, 1);
  EXPECT_TRUE(p1.up);
  EXPECT_DOUBLE_EQ(p1.speedGbps, 200);
  ASSERT_EQ(p1.gids.size(), 1u);  // the zero GID is skipped
  EXPECT_EQ(p1.gids[0].type, "IB/RoCE v1");
  const Node& p2 = sys.nodes[nics[1]];
  EXPECT_EQ(p2.port, 2);
  EXPECT_FALSE(p2.up);
  const Node& r = sys.nodes[nics[2]];
  EXPECT_EQ(r.linkLayer, "Ethernet");
  EXPECT_EQ(r.netdev, "ens1np0");
  ASSERT_EQ(r.gids.size(), 1u);
  EXPECT_EQ(r.gids[0].index, 2);
  EXPECT_EQ(r.gids[0].type, "RoCE v2");
  for (int n : nics) EXPECT_EQ(sys.linksOf(n).size(), 1u);
}

TEST_F(FakeSysfs, NoInfinibandTreeAddsNothing) {
  System sys;
  sys.addHost("h");
  Node cpu;
  cpu.id = "cpu0";
  sys.addNode(cpu);
  detail::detectIbPorts(sys, 0, root_.string());
  EXPECT_EQ(sys.nodes.size(), 1u);
}

}  // namespace
}  // namespace weft::topo
