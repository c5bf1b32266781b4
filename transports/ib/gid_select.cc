#include "transports/ib/gid_select.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <cstring>

#include "src/util/error.h"

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

namespace {

bool filterAccepts(const GidFilter& f, const GidEntry& e) {
  if (f.roceVersion == 1 && e.type != GidType::IbRoceV1) return false;
  if (f.roceVersion == 2 && e.type != GidType::RoceV2) return false;
  if (f.family == 4 && !gidIsIpv4Mapped(e.gid)) return false;
  if (f.family == 6 && gidIsIpv4Mapped(e.gid)) return false;
  return !f.range.set || addrRangeContains(f.range, e.gid);
}

std::string filterText(const GidFilter& f) {
  std::string s;
  if (f.roceVersion) s += " WEFT_IB_ROCE_VERSION=" + std::to_string(f.roceVersion);
  if (f.family) s += std::string(" WEFT_IB_ADDR_FAMILY=") + (f.family == 4 ? "AF_INET" : "AF_INET6");
  if (f.range.set) s += " WEFT_IB_ADDR_RANGE=" + f.range.text;
  return s;
}

GidChoice forcedGid(const std::vector<GidEntry>& table, int forcedIndex) {
  GidChoice c;
  for (const auto& e : table) {
    if (e.index != forcedIndex) continue;
    if (gidIsZero(e.gid)) {
      c.reason = "WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) + " is an empty GID entry";
      return c;
    }
    c.ok = true;
    c.index = forcedIndex;
    c.type = e.type;
    c.reason = "WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) + " (" + gidTypeName(e.type) + " " +
               formatGid(e.gid) + ")";
    return c;
  }
  c.reason = "GID not found: WEFT_IB_GID_INDEX=" + std::to_string(forcedIndex) + " is not in the port's GID table (" +
             std::to_string(table.size()) + " entries)";
  return c;
}

GidChoice autoRoceGid(const std::vector<GidEntry>& table, const GidFilter& filter) {
  GidChoice c;
  int bestRank = -1;
  const GidEntry* best = nullptr;
  bool any = false;
  for (const auto& e : table) {
    int r = roceRank(e);
    if (r < 0) continue;
    any = true;
    if (!filterAccepts(filter, e)) continue;
    if (!best || r < bestRank || (r == bestRank && e.index < best->index)) {
      best = &e;
      bestRank = r;
    }
  }
  if (!best) {
    c.reason = any ? "GID not found: no GID of the RoCE port matches" + filterText(filter)
                   : "GID not found: no non-zero GID on the RoCE port (is an IP address configured on its netdev?)";
    return c;
  }
  c.ok = true;
  c.index = best->index;
  c.type = best->type;
  c.reason = std::string("auto: ") + rankWhy(bestRank) + ", index " + std::to_string(best->index) + " " +
             formatGid(best->gid) + (filterText(filter).empty() ? "" : " (" + filterText(filter).substr(1) + ")");
  return c;
}

}  // namespace

GidChoice selectGid(const std::vector<GidEntry>& table, bool ethernet, int forcedIndex, const GidFilter& filter) {
  if (forcedIndex >= 0) return forcedGid(table, forcedIndex);
  if (ethernet) return autoRoceGid(table, filter);
  GidChoice c;
  for (const auto& e : table) {
    if (e.index == 0 && !gidIsZero(e.gid)) {
      c.ok = true;
      c.index = 0;
      c.type = e.type;
      c.reason = "InfiniBand port GID 0 " + formatGid(e.gid);
      return c;
    }
  }
  c.reason = "GID not found: InfiniBand port has no GID 0";
  return c;
}

AddrRange parseAddrRange(const std::string& text) {
  AddrRange r;
  if (text.empty()) return r;
  r.text = text;
  const size_t slash = text.find('/');
  if (slash == std::string::npos || slash + 1 >= text.size())
    raise(weftInvalidArgument, "WEFT_IB_ADDR_RANGE=\"%s\" is not <address>/<prefix length>", text.c_str());
  const std::string addr = text.substr(0, slash), len = text.substr(slash + 1);
  if (!std::all_of(len.begin(), len.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) ||
      len.size() > 3)
    raise(weftInvalidArgument, "WEFT_IB_ADDR_RANGE=\"%s\": prefix length \"%s\" is not a number", text.c_str(),
          len.c_str());
  const int bits = std::stoi(len);
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1) {
    if (bits > 32) raise(weftInvalidArgument, "WEFT_IB_ADDR_RANGE=\"%s\": IPv4 prefix longer than 32", text.c_str());
    r.v4 = true;
    r.prefix[10] = r.prefix[11] = 0xff;
    std::memcpy(&r.prefix[12], &v4, 4);
    r.bits = 96 + bits;
  } else if (inet_pton(AF_INET6, addr.c_str(), &v6) == 1) {
    if (bits > 128) raise(weftInvalidArgument, "WEFT_IB_ADDR_RANGE=\"%s\": IPv6 prefix longer than 128", text.c_str());
    std::memcpy(r.prefix.data(), &v6, 16);
    r.bits = bits;
  } else {
    raise(weftInvalidArgument, "WEFT_IB_ADDR_RANGE=\"%s\": \"%s\" is neither an IPv4 nor an IPv6 address",
          text.c_str(), addr.c_str());
  }
  r.set = true;
  return r;
}

bool addrRangeContains(const AddrRange& r, const Gid& g) {
  if (!r.set) return true;
  if (r.v4 != gidIsIpv4Mapped(g)) return false;
  for (int bit = 0; bit < r.bits; ++bit) {
    const int byte = bit / 8, mask = 0x80 >> (bit % 8);
    if ((g[byte] & mask) != (r.prefix[byte] & mask)) return false;
  }
  return true;
}

int parseAddrFamily(const std::string& text) {
  std::string t;
  for (char ch : text) t += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (t.empty()) return 0;
  if (t == "AF_INET" || t == "IPV4" || t == "4") return 4;
  if (t == "AF_INET6" || t == "IPV6" || t == "6") return 6;
  raise(weftInvalidArgument, "WEFT_IB_ADDR_FAMILY=\"%s\" is not AF_INET or AF_INET6", text.c_str());
}

uint64_t subnetPrefixOf(const Gid& g) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | g[i];
  return v;
}

std::string gidPairProblem(bool roce, const GidAddress& local, const GidAddress& remote) {
  if (!roce) {
    if (local.subnetPrefix != remote.subnetPrefix && gidIsZero(remote.gid))
      return "the peer is on another subnet but sent an all-zero GID";
    return "";
  }
  if (std::string why = roceGidMismatch(local.gid, remote.gid); !why.empty()) return why;
  if (local.type != GidType::Unknown && remote.type != GidType::Unknown && local.type != remote.type)
    return std::string("RoCE versions differ: ") + gidTypeName(local.type) + " here, " + gidTypeName(remote.type) +
           " on the peer";
  if (!gidIsIpv4Mapped(local.gid) && gidIsLinkLocal(local.gid) != gidIsLinkLocal(remote.gid))
    return "a link-local GID (" + formatGid(gidIsLinkLocal(local.gid) ? local.gid : remote.gid) +
           ") cannot reach a global one across subnets";
  if (local.type == GidType::IbRoceV1 && !gidIsIpv4Mapped(local.gid) && local.subnetPrefix != remote.subnetPrefix)
    return "RoCE v1 is not routed, and the subnets differ (" + formatGid(local.gid) + " here, " +
           formatGid(remote.gid) + " on the peer)";
  return "";
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
