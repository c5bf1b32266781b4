#include <gtest/gtest.h>

#include "src/util/error.h"
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

// ---- the NCCL-style filters, and what two ends' addresses allow ----

namespace {

GidFilter filter(int version, const std::string& family, const std::string& range) {
  GidFilter f;
  f.roceVersion = version;
  f.family = parseAddrFamily(family);
  f.range = parseAddrRange(range);
  return f;
}

}  // namespace

TEST(GidFilters, RoceVersionFamilyAndRangeNarrowTheAutomaticChoice) {
  std::vector<GidEntry> t = typicalRoceTable();
  auto pick = [&](const GidFilter& f) { return selectGid(t, true, -1, f); };
  // Unfiltered: v2 IPv4-mapped.
  GidChoice any = pick(GidFilter{});
  ASSERT_TRUE(any.ok);
  EXPECT_EQ(any.type, GidType::RoceV2);
  EXPECT_TRUE(gidIsIpv4Mapped(t[any.index].gid));
  // RoCE v1 only.
  GidChoice v1 = pick(filter(1, "", ""));
  ASSERT_TRUE(v1.ok) << v1.reason;
  EXPECT_EQ(v1.type, GidType::IbRoceV1);
  EXPECT_NE(v1.reason.find("WEFT_IB_ROCE_VERSION=1"), std::string::npos) << v1.reason;
  // IPv6: the global v2 entry beats the link-local ones.
  GidChoice v6 = pick(filter(2, "AF_INET6", ""));
  ASSERT_TRUE(v6.ok) << v6.reason;
  EXPECT_FALSE(gidIsIpv4Mapped(t[v6.index].gid));
  EXPECT_FALSE(gidIsLinkLocal(t[v6.index].gid));
  // A range that holds the IPv4 address, and one that holds nothing.
  GidChoice inRange = pick(filter(0, "", "10.0.0.0/8"));
  ASSERT_TRUE(inRange.ok) << inRange.reason;
  EXPECT_TRUE(addrRangeContains(parseAddrRange("10.0.0.0/8"), t[inRange.index].gid));
  GidChoice none = pick(filter(0, "", "192.168.0.0/16"));
  EXPECT_FALSE(none.ok);
  EXPECT_NE(none.reason.find("no GID of the RoCE port matches WEFT_IB_ADDR_RANGE=192.168.0.0/16"), std::string::npos)
      << none.reason;
  // WEFT_IB_GID_INDEX overrides the filters.
  GidChoice forced = selectGid(t, true, 0, filter(2, "AF_INET", "10.0.0.0/8"));
  EXPECT_TRUE(forced.ok);
  EXPECT_EQ(forced.index, 0);
}

TEST(GidFilters, RangesAndFamiliesParseOrNameTheirError) {
  AddrRange r = parseAddrRange("10.1.0.0/16");
  EXPECT_TRUE(r.set && r.v4);
  EXPECT_EQ(r.bits, 112);
  EXPECT_TRUE(addrRangeContains(r, ipv4Mapped(10, 1, 200, 3)));
  EXPECT_FALSE(addrRangeContains(r, ipv4Mapped(10, 2, 0, 1)));
  EXPECT_FALSE(addrRangeContains(r, linkLocal(1)));
  AddrRange v6 = parseAddrRange("2001:db8::/32");
  EXPECT_TRUE(addrRangeContains(v6, globalV6()));
  EXPECT_FALSE(addrRangeContains(v6, linkLocal(1)));
  EXPECT_FALSE(addrRangeContains(v6, ipv4Mapped(10, 0, 0, 1)));
  EXPECT_TRUE(addrRangeContains(parseAddrRange(""), linkLocal(1)));
  EXPECT_TRUE(addrRangeContains(parseAddrRange("0.0.0.0/0"), ipv4Mapped(1, 2, 3, 4)));
  for (const char* bad : {"10.0.0.0", "10.0.0.0/", "10.0.0.0/33", "fd00::/129", "host/8", "10.0.0.0/x", "1.2.3.4/0008"})
    EXPECT_THROW(parseAddrRange(bad), weft::Error) << bad;
  EXPECT_EQ(parseAddrFamily(""), 0);
  EXPECT_EQ(parseAddrFamily("af_inet"), 4);
  EXPECT_EQ(parseAddrFamily("AF_INET6"), 6);
  EXPECT_EQ(parseAddrFamily("ipv6"), 6);
  EXPECT_THROW(parseAddrFamily("AF_UNIX"), weft::Error);
}

TEST(GidPair, RoceMismatchesAreNamedAtConnect) {
  auto addr = [](Gid g, GidType t) { return GidAddress{g, t, subnetPrefixOf(g)}; };
  const GidAddress v2a = addr(ipv4Mapped(10, 0, 0, 1), GidType::RoceV2);
  EXPECT_EQ(gidPairProblem(true, v2a, addr(ipv4Mapped(10, 0, 1, 1), GidType::RoceV2)), "");
  EXPECT_NE(gidPairProblem(true, v2a, addr(ipv4Mapped(10, 0, 1, 1), GidType::IbRoceV1)).find("RoCE versions differ"),
            std::string::npos);
  EXPECT_NE(gidPairProblem(true, v2a, addr(globalV6(), GidType::RoceV2)).find("address families differ"),
            std::string::npos);
  EXPECT_NE(gidPairProblem(true, addr(linkLocal(1), GidType::RoceV2), addr(globalV6(), GidType::RoceV2))
                .find("link-local GID"),
            std::string::npos);
  EXPECT_EQ(gidPairProblem(true, addr(linkLocal(1), GidType::RoceV2), addr(linkLocal(2), GidType::RoceV2)), "");
  Gid otherSubnet = globalV6();
  otherSubnet[7] = 9;
  EXPECT_NE(gidPairProblem(true, addr(globalV6(), GidType::IbRoceV1), addr(otherSubnet, GidType::IbRoceV1))
                .find("RoCE v1 is not routed"),
            std::string::npos);
  EXPECT_EQ(gidPairProblem(true, addr(globalV6(), GidType::RoceV2), addr(otherSubnet, GidType::RoceV2)), "");
  // An unknown type (an old peer's sysfs) is not a mismatch.
  EXPECT_EQ(gidPairProblem(true, v2a, addr(ipv4Mapped(10, 0, 1, 1), GidType::Unknown)), "");
}

TEST(GidPair, InfiniBandAcrossSubnetsNeedsAGrh) {
  Gid here = linkLocal(1), there = linkLocal(2);
  there[1] = 0xc0;  // another subnet prefix
  EXPECT_FALSE(needsGrh(false, subnetPrefixOf(here), subnetPrefixOf(linkLocal(3))));
  EXPECT_TRUE(needsGrh(false, subnetPrefixOf(here), subnetPrefixOf(there)));
  EXPECT_TRUE(needsGrh(true, 1, 1));
  const GidAddress a{here, GidType::IbRoceV1, subnetPrefixOf(here)};
  EXPECT_EQ(gidPairProblem(false, a, GidAddress{there, GidType::IbRoceV1, subnetPrefixOf(there)}), "");
  EXPECT_NE(gidPairProblem(false, a, GidAddress{Gid{}, GidType::IbRoceV1, 5}).find("all-zero GID"), std::string::npos);
}
