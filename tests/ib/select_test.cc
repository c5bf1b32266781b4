#include <gtest/gtest.h>

#include "src/util/error.h"
#include "transports/ib/ib_select.h"

using namespace weft::ib;

namespace {

GidEntry roceV2Ipv4(int index) {
  GidEntry e;
  e.index = index;
  e.gid[10] = e.gid[11] = 0xff;
  e.gid[12] = 10;
  e.gid[15] = static_cast<uint8_t>(index + 1);
  e.type = GidType::RoceV2;
  return e;
}

GidEntry ibGid0() {
  GidEntry e;
  e.gid[0] = 0xfe;
  e.gid[1] = 0x80;
  e.gid[15] = 1;
  e.type = GidType::IbRoceV1;
  return e;
}

PortState port(const std::string& dev, int p, bool active, LinkLayer ll, int mbps) {
  PortState s;
  s.dev = dev;
  s.port = p;
  s.active = active;
  s.stateName = active ? "ACTIVE" : "DOWN";
  s.linkLayer = ll;
  s.speedMbps = mbps;
  if (ll == LinkLayer::Ethernet) s.gids = {roceV2Ipv4(0), roceV2Ipv4(3)};
  if (ll == LinkLayer::InfiniBand) s.gids = {ibGid0()};
  return s;
}

Discovery found(std::vector<PortState> ports) {
  Discovery d;
  d.verbsLoaded = true;
  d.ports = std::move(ports);
  return d;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// The fallback decision table: each row is one situation a user meets, and
// the reason text they should see.
TEST(IbDecide, FallbackTable) {
  const HcaFilter none = parseHcaFilter("");
  struct Row {
    const char* name;
    Discovery d;
    HcaFilter filter;
    bool disabled;
    int gidIndex;
    bool useIb;
    const char* reasonPart;
  };
  Discovery noVerbs;
  noVerbs.loadError = "libibverbs.so.1: cannot open shared object file";
  std::vector<Row> rows = {
      {"disabled", found({port("mlx5_0", 1, true, LinkLayer::InfiniBand, 200000)}), none, true, -1, false,
       "WEFT_IB_DISABLE"},
      {"no libibverbs", noVerbs, none, false, -1, false, "libibverbs not available (libibverbs.so.1"},
      {"no device", found({}), none, false, -1, false, "no IB device"},
      {"filtered", found({port("mlx5_0", 1, true, LinkLayer::InfiniBand, 1)}), parseHcaFilter("=mlx4_0"), false, -1,
       false, "filtered by WEFT_IB_HCA=\"=mlx4_0\""},
      {"port down", found({port("mlx5_0", 1, false, LinkLayer::InfiniBand, 1)}), none, false, -1, false,
       "port down (mlx5_0:1 DOWN)"},
      {"gid index missing", found({port("mlx5_0", 1, true, LinkLayer::Ethernet, 1)}), none, false, 7, false,
       "GID not found"},
      {"unknown link layer", found({port("hfi1_0", 1, true, LinkLayer::Unknown, 1)}), none, false, -1, false,
       "unknown link layer"},
      {"ib ok", found({port("mlx5_0", 1, true, LinkLayer::InfiniBand, 200000)}), none, false, -1, true, "mlx5_0:1/IB"},
      {"roce ok", found({port("mlx5_0", 1, true, LinkLayer::Ethernet, 100000)}), none, false, -1, true,
       "mlx5_0:1/RoCE"},
      {"one of two filtered out", found({port("mlx5_0", 1, true, LinkLayer::Ethernet, 1), port("mlx5_1", 1, true, LinkLayer::Ethernet, 1)}),
       parseHcaFilter("^mlx5_0"), false, -1, true, "mlx5_1:1"},
  };
  for (const auto& r : rows) {
    Decision d = decide(r.d, r.filter, r.disabled, r.gidIndex);
    EXPECT_EQ(d.useIb, r.useIb) << r.name << ": " << d.reason;
    EXPECT_TRUE(contains(d.reason, r.reasonPart)) << r.name << ": \"" << d.reason << "\" lacks \"" << r.reasonPart << "\"";
    EXPECT_EQ(d.usable.empty(), !r.useIb) << r.name;
  }
}

TEST(IbDecide, DownPortDoesNotHideAGoodOneAndFastestComesFirst) {
  Decision d = decide(found({port("mlx5_0", 1, false, LinkLayer::InfiniBand, 400000),
                             port("mlx5_1", 1, true, LinkLayer::Ethernet, 25000),
                             port("mlx5_2", 1, true, LinkLayer::Ethernet, 100000)}),
                      parseHcaFilter(""), false, -1);
  ASSERT_TRUE(d.useIb) << d.reason;
  ASSERT_EQ(d.usable.size(), 2u);
  EXPECT_EQ(d.usable[0].dev, "mlx5_2");
  EXPECT_EQ(d.usable[1].dev, "mlx5_1");
  ASSERT_EQ(d.gid.size(), 2u);
  EXPECT_EQ(d.gid[0].index, 0);  // both RoCE v2 IPv4 entries rank equal: lowest index
}

TEST(IbDecide, NoGidReasonAlsoListsDownPorts) {
  PortState noGid = port("mlx5_1", 1, true, LinkLayer::Ethernet, 1);
  noGid.gids.clear();
  Decision d = decide(found({port("mlx5_0", 1, false, LinkLayer::Ethernet, 1), noGid}), parseHcaFilter(""), false, -1);
  EXPECT_FALSE(d.useIb);
  EXPECT_TRUE(contains(d.reason, "GID not found")) << d.reason;
  EXPECT_TRUE(contains(d.reason, "mlx5_0:1 DOWN")) << d.reason;
}

TEST(IbConfig, RangesChecked) {
  IbConfig ok;
  EXPECT_NO_THROW(validateIbConfig(ok));
  auto bad = [](auto mutate) {
    IbConfig c;
    mutate(c);
    EXPECT_THROW(validateIbConfig(c), weft::Error);
  };
  bad([](IbConfig& c) { c.timeout = 0; });
  bad([](IbConfig& c) { c.timeout = 32; });
  bad([](IbConfig& c) { c.retryCount = 8; });
  bad([](IbConfig& c) { c.serviceLevel = 16; });
  bad([](IbConfig& c) { c.trafficClass = 256; });
  bad([](IbConfig& c) { c.qpsPerConnection = 0; });
  bad([](IbConfig& c) { c.qpsPerConnection = 17; });
  bad([](IbConfig& c) { c.gidIndex = -2; });
}

TEST(IbConfig, ReadsEnvironment) {
  setenv("WEFT_IB_TIMEOUT", "18", 1);
  setenv("WEFT_IB_QPS_PER_CONNECTION", "4", 1);
  setenv("WEFT_IB_HCA", "=mlx5_0:1", 1);
  IbConfig c = readIbConfig();
  EXPECT_EQ(c.timeout, 18);
  EXPECT_EQ(c.qpsPerConnection, 4);
  EXPECT_EQ(c.hca, "=mlx5_0:1");
  EXPECT_EQ(c.retryCount, 7);
  setenv("WEFT_IB_RETRY_CNT", "9", 1);
  EXPECT_THROW(readIbConfig(), weft::Error);
  unsetenv("WEFT_IB_TIMEOUT");
  unsetenv("WEFT_IB_QPS_PER_CONNECTION");
  unsetenv("WEFT_IB_HCA");
  unsetenv("WEFT_IB_RETRY_CNT");
}

TEST(IbDecide, PortSpeed) {
  EXPECT_EQ(portSpeedMbps(32, 2), 100000);   // EDR 4x
  EXPECT_EQ(portSpeedMbps(64, 2), 200000);   // HDR 4x
  EXPECT_EQ(portSpeedMbps(128, 2), 400000);  // NDR 4x
  EXPECT_EQ(portSpeedMbps(128, 16), 200000); // NDR 2x
  EXPECT_EQ(portSpeedMbps(1, 1), 2500);
  EXPECT_EQ(portSpeedMbps(0, 0), 2500) << "unknown codes must not give 0";
}
