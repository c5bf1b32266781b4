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
  std::string reason;  // why it was chosen, or why none was
};

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
GidChoice selectGid(const std::vector<GidEntry>& table, bool ethernet, int forcedIndex);

// RoCE only: why two ends' GIDs cannot reach each other, "" when they may.
// An IPv4-mapped GID and an IPv6 one are different address families (RoCE
// v2 routes them as IPv4 and IPv6 packets): without this check the pair
// fails with status 12 after the full retry time instead of at connect.
std::string roceGidMismatch(const Gid& local, const Gid& remote);

}  // namespace weft::ib
