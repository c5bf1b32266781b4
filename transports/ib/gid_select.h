// Which GID of a port to put in the GRH.
//
// On InfiniBand the LID addresses the peer and GID 0 is enough. On RoCE the
// GID *is* the address, and a port's table mixes RoCE v1 and v2 entries,
// link-local IPv6, global IPv6 and IPv4-mapped addresses; picking the wrong
// one gives "completion with error 12" (retries exceeded) instead of a clear
// message. WEFT_IB_GID_INDEX forces an index; otherwise the choice below.
// Pure: the table is read from verbs/sysfs elsewhere.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::ib {

using Gid = std::array<uint8_t, 16>;

enum class GidType { IbRoceV1, RoceV2, Unknown };

struct GidEntry {
  int index = 0;
  Gid gid{};
  GidType type = GidType::Unknown;
};

struct GidChoice {
  bool ok = false;
  int index = -1;
  GidType type = GidType::Unknown;
  std::string reason;  // why it was chosen, or why none was
};

// WEFT_IB_ADDR_RANGE: "10.1.0.0/16" or "fd00::/8"; IPv4 ranges match
// IPv4-mapped GIDs only, IPv6 ranges the others. Empty: any.
struct AddrRange {
  bool set = false;
  bool v4 = false;
  Gid prefix{};  // an IPv4 range as its IPv4-mapped GID
  int bits = 0;  // of the 128-bit GID (an IPv4 /16 is bits 96 + 16)
  std::string text;
};

// Throws weftInvalidArgument naming WEFT_IB_ADDR_RANGE and what is wrong.
AddrRange parseAddrRange(const std::string& text);
bool addrRangeContains(const AddrRange& r, const Gid& g);

// The RoCE GID filters (NCCL-style). They narrow the automatic choice;
// WEFT_IB_GID_INDEX overrides them.
struct GidFilter {
  int roceVersion = 0;  // WEFT_IB_ROCE_VERSION: 0 any, 1 or 2
  int family = 0;       // WEFT_IB_ADDR_FAMILY: 0 any, 4 (IPv4-mapped) or 6
  AddrRange range;      // WEFT_IB_ADDR_RANGE
};

// "", "AF_INET"/"ipv4"/"4" -> 4, "AF_INET6"/"ipv6"/"6" -> 6 (any case);
// anything else throws weftInvalidArgument naming WEFT_IB_ADDR_FAMILY.
int parseAddrFamily(const std::string& text);

// Parses /sys/class/infiniband/<dev>/ports/<p>/gid_attrs/types/<i>
// ("IB/RoCE v1", "RoCE v2", with or without a trailing newline).
GidType parseGidType(const std::string& text);
const char* gidTypeName(GidType t);

bool gidIsZero(const Gid& g);
bool gidIsIpv4Mapped(const Gid& g);   // ::ffff:a.b.c.d
bool gidIsLinkLocal(const Gid& g);    // fe80::/10
std::string formatGid(const Gid& g);  // "fe80:0000:...", or "::ffff:10.0.0.1"

// ethernet: the port's link layer is Ethernet (RoCE). forcedIndex < 0: auto.
// Auto on RoCE prefers, lowest index first within a rank:
//   RoCE v2 IPv4-mapped > RoCE v2 global IPv6 > RoCE v2 link-local
//   > RoCE v1 IPv4-mapped > any other non-zero GID.
// Auto on InfiniBand takes index 0 when non-zero.
// The filter keeps only matching entries for the automatic RoCE choice;
// when none is left the reason names the filters.
GidChoice selectGid(const std::vector<GidEntry>& table, bool ethernet, int forcedIndex,
                    const GidFilter& filter = GidFilter{});

// The upper 64 bits of a GID: the subnet prefix on InfiniBand.
uint64_t subnetPrefixOf(const Gid& g);

// One end's address as the connection info carries it.
struct GidAddress {
  Gid gid{};
  GidType type = GidType::Unknown;
  uint64_t subnetPrefix = 0;
};

// Why two ends cannot reach each other, "" when they may. RoCE: an all-zero
// GID, address families (below), RoCE versions, a link-local GID facing a
// global one, RoCE v1 across subnets (it is not routed). InfiniBand: an
// all-zero GID when the subnets differ (the GRH needs it).
std::string gidPairProblem(bool roce, const GidAddress& local, const GidAddress& remote);

// A GRH in every packet: always on RoCE; on InfiniBand when the peer is on
// another subnet (routed IB), where the LID alone does not reach it.
inline bool needsGrh(bool roce, uint64_t localSubnet, uint64_t remoteSubnet) {
  return roce || localSubnet != remoteSubnet;
}

// RoCE only: why two ends' GIDs cannot reach each other, "" when they may.
// An IPv4-mapped GID and an IPv6 one are different address families (RoCE
// v2 routes them as IPv4 and IPv6 packets): without this check the pair
// fails with status 12 after the full retry time instead of at connect.
std::string roceGidMismatch(const Gid& local, const Gid& remote);

}  // namespace weft::ib
