#include <gtest/gtest.h>

#include "transports/ib/gid_select.h"

using namespace weft::ib;

namespace {

Gid ipv4Mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Gid g{};
  g[10] = g[11] = 0xff;
  g[12] = a;
  g[13] = b;
  g[14] = c;
  g[15] = d;
  return g;
}

Gid linkLocal(uint8_t last) {
  Gid g{};
  g[0] = 0xfe;
  g[1] = 0x80;
  g[8] = 0x02;
  g[15] = last;
  return g;
}

Gid globalV6() {
  Gid g{};
  g[0] = 0x20;
  g[1] = 0x01;
  g[2] = 0x0d;
  g[3] = 0xb8;
  g[15] = 7;
  return g;
}

// The table of a typical mlx5 RoCE port with one IPv4 and one IPv6 address,
// as `show_gids` prints it: v1/v2 pairs per address.
std::vector<GidEntry> typicalRoceTable() {
  return {
      {0, linkLocal(1), GidType::IbRoceV1},       {1, linkLocal(1), GidType::RoceV2},
      {2, ipv4Mapped(10, 0, 0, 5), GidType::IbRoceV1}, {3, ipv4Mapped(10, 0, 0, 5), GidType::RoceV2},
      {4, globalV6(), GidType::IbRoceV1},          {5, globalV6(), GidType::RoceV2},
  };
}

}  // namespace

TEST(IbGid, ParseType) {
  EXPECT_EQ(parseGidType("RoCE v2\n"), GidType::RoceV2);
  EXPECT_EQ(parseGidType("IB/RoCE v1\n"), GidType::IbRoceV1);
  EXPECT_EQ(parseGidType("IB/RoCE v1"), GidType::IbRoceV1);
  EXPECT_EQ(parseGidType(""), GidType::Unknown);
  EXPECT_EQ(parseGidType("RoCE v3"), GidType::Unknown);
}

TEST(IbGid, Classify) {
  EXPECT_TRUE(gidIsZero(Gid{}));
  EXPECT_TRUE(gidIsIpv4Mapped(ipv4Mapped(192, 168, 1, 2)));
  EXPECT_FALSE(gidIsIpv4Mapped(linkLocal(1)));
  EXPECT_TRUE(gidIsLinkLocal(linkLocal(1)));
  EXPECT_FALSE(gidIsLinkLocal(globalV6()));
  EXPECT_EQ(formatGid(ipv4Mapped(192, 168, 1, 2)), "::ffff:192.168.1.2");
  EXPECT_EQ(formatGid(linkLocal(1)), "fe80:0000:0000:0000:0200:0000:0000:0001");
}

TEST(IbGid, AutoPrefersRoceV2Ipv4) {
  GidChoice c = selectGid(typicalRoceTable(), true, -1);
  ASSERT_TRUE(c.ok) << c.reason;
  EXPECT_EQ(c.index, 3);
  EXPECT_NE(c.reason.find("RoCE v2 IPv4"), std::string::npos) << c.reason;
}

TEST(IbGid, AutoFallsBackInOrder) {
  auto t = typicalRoceTable();
  t.erase(t.begin() + 3);  // no v2 IPv4: the global IPv6 v2 entry wins
  EXPECT_EQ(selectGid(t, true, -1).index, 5);
  t.pop_back();            // no v2 global: v2 link-local
  EXPECT_EQ(selectGid(t, true, -1).index, 1);
  t.erase(t.begin() + 1);  // no v2 at all: v1 IPv4-mapped
  EXPECT_EQ(selectGid(t, true, -1).index, 2);
}

TEST(IbGid, AutoSkipsZeroEntriesAndTakesLowestIndexOnTies) {
  std::vector<GidEntry> t = {{0, Gid{}, GidType::RoceV2},
                             {1, ipv4Mapped(10, 0, 0, 1), GidType::RoceV2},
                             {2, ipv4Mapped(10, 0, 0, 2), GidType::RoceV2}};
  EXPECT_EQ(selectGid(t, true, -1).index, 1);
}

TEST(IbGid, NothingUsableOnRoce) {
  std::vector<GidEntry> t = {{0, Gid{}, GidType::RoceV2}, {1, Gid{}, GidType::IbRoceV1}};
  GidChoice c = selectGid(t, true, -1);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("GID not found"), std::string::npos) << c.reason;
  EXPECT_FALSE(selectGid({}, true, -1).ok);
}

TEST(IbGid, Forced) {
  auto t = typicalRoceTable();
  GidChoice c = selectGid(t, true, 4);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.index, 4);
  GidChoice missing = selectGid(t, true, 9);
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.reason.find("WEFT_IB_GID_INDEX=9"), std::string::npos) << missing.reason;
  t[4].gid = Gid{};
  EXPECT_FALSE(selectGid(t, true, 4).ok);
}

TEST(IbGid, InfiniBandUsesIndexZero) {
  std::vector<GidEntry> t = {{0, linkLocal(9), GidType::IbRoceV1}, {1, globalV6(), GidType::IbRoceV1}};
  GidChoice c = selectGid(t, false, -1);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.index, 0);
  EXPECT_FALSE(selectGid({{0, Gid{}, GidType::IbRoceV1}}, false, -1).ok);
}

TEST(RoceGidMismatch, AddressFamiliesMustAgree) {
  EXPECT_EQ(roceGidMismatch(ipv4Mapped(10, 0, 0, 1), ipv4Mapped(10, 0, 0, 2)), "");
  EXPECT_EQ(roceGidMismatch(globalV6(), linkLocal(3)), "");
  std::string why = roceGidMismatch(ipv4Mapped(10, 0, 0, 1), linkLocal(3));
  EXPECT_NE(why.find("address families differ: IPv4 GID ::ffff:10.0.0.1 here, IPv6 GID fe80"), std::string::npos)
      << why;
  EXPECT_NE(roceGidMismatch(linkLocal(3), ipv4Mapped(10, 0, 0, 1)), "");
  EXPECT_EQ(roceGidMismatch(linkLocal(3), Gid{}), "the peer's GID is all zeros");
}
