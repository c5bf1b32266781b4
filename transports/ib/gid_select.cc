#include "transports/ib/gid_select.h"

#include <cstdio>

namespace weft::ib {

GidType parseGidType(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r')) t.pop_back();
  if (t == "IB/RoCE v1") return GidType::IbRoceV1;
  if (t == "RoCE v2") return GidType::RoceV2;
  return GidType::Unknown;
}

const char* gidTypeName(GidType t) {
  switch (t) {
    case GidType::IbRoceV1: return "IB/RoCE v1";
    case GidType::RoceV2: return "RoCE v2";
    default: return "unknown";
  }
}

bool gidIsZero(const Gid& g) {
  for (uint8_t b : g)
    if (b) return false;
  return true;
}

bool gidIsIpv4Mapped(const Gid& g) {
  for (int i = 0; i < 10; ++i)
    if (g[i]) return false;
  return g[10] == 0xff && g[11] == 0xff;
}

bool gidIsLinkLocal(const Gid& g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

std::string formatGid(const Gid& g) {
  char buf[48];
  if (gidIsIpv4Mapped(g)) {
    std::snprintf(buf, sizeof buf, "::ffff:%u.%u.%u.%u", g[12], g[13], g[14], g[15]);
    return buf;
  }
  std::string s;
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(buf, sizeof buf, "%s%02x%02x", i ? ":" : "", g[i], g[i + 1]);
    s += buf;
  }
  return s;
}

namespace {

// Lower is better; -1 means unusable.
int roceRank(const GidEntry& e) {
  if (gidIsZero(e.gid)) return -1;
  if (e.type == GidType::RoceV2) {
    if (gidIsIpv4Mapped(e.gid)) return 0;
    if (!gidIsLinkLocal(e.gid)) return 1;
    return 2;
  }
  if (e.type == GidType::IbRoceV1 && gidIsIpv4Mapped(e.gid)) return 3;
  return 4;
}

const char* rankWhy(int r) {
  switch (r) {
    case 0: return "RoCE v2 IPv4-mapped";
    case 1: return "RoCE v2 global IPv6";
    case 2: return "RoCE v2 link-local IPv6 (does not route across subnets)";
    case 3: return "RoCE v1 IPv4-mapped (no RoCE v2 GID found)";
    default: return "first non-zero GID (no RoCE v2 or IPv4 GID found)";
  }
}

}  // namespace

GidChoice selectGid(const std::vector<GidEntry>& table, bool ethernet, int forcedIndex) {
  GidChoice c;
  if (forcedIndex >= 0) {
    for (const auto& e : table) {
      if (e.index != forcedIndex) continue;
      if (gidIsZero(e.gid)) {
        c.reason = "WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) + " is an empty GID entry";
        return c;
      }
      c.ok = true;
      c.index = forcedIndex;
      c.reason = "WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) + " (" + gidTypeName(e.type) + " " +
                 formatGid(e.gid) + ")";
      return c;
    }
    c.reason = "GID not found: WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) + " is not in the port's GID table (" +
               std::to_string(table.size()) + " entries)";
    return c;
  }
  if (!ethernet) {
    for (const auto& e : table) {
      if (e.index == 0 && !gidIsZero(e.gid)) {
        c.ok = true;
        c.index = 0;
        c.reason = "InfiniBand port GID 0 " + formatGid(e.gid);
        return c;
      }
    }
    c.reason = "GID not found: InfiniBand port has no GID 0";
    return c;
  }
  int bestRank = -1;
  const GidEntry* best = nullptr;
  for (const auto& e : table) {
    int r = roceRank(e);
    if (r < 0) continue;
    if (!best || r < bestRank || (r == bestRank && e.index < best->index)) {
      best = &e;
      bestRank = r;
    }
  }
  if (!best) {
    c.reason = "GID not found: no non-zero GID on the RoCE port (is an IP address configured on its netdev?)";
    return c;
  }
  c.ok = true;
  c.index = best->index;
  c.reason = std::string("auto: ") + rankWhy(bestRank) + ", index " + std::to_string(best->index) + " " +
             formatGid(best->gid);
  return c;
}

std::string roceGidMismatch(const Gid& local, const Gid& remote) {
  if (gidIsZero(remote)) return "the peer's GID is all zeros";
  if (gidIsIpv4Mapped(local) != gidIsIpv4Mapped(remote))
    return std::string("address families differ: ") + (gidIsIpv4Mapped(local) ? "IPv4" : "IPv6") + " GID " +
           formatGid(local) + " here, " + (gidIsIpv4Mapped(remote) ? "IPv4" : "IPv6") + " GID " + formatGid(remote) +
           " on the peer";
  return "";
}

}  // namespace weft::ib
