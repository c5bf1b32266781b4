#include "transports/ib/ib_select.h"

#include <algorithm>

#include "src/util/error.h"
#include "transports/ib/conn_info.h"
#include "src/util/settings.h"

namespace weft::ib {

const char* linkLayerName(LinkLayer l) {
  switch (l) {
    case LinkLayer::InfiniBand: return "IB";
    case LinkLayer::Ethernet: return "RoCE";
    default: return "unknown";
  }
}

int portSpeedMbps(unsigned activeSpeed, unsigned activeWidth) {
  int lane = 2500;
  switch (activeSpeed) {
    case 2: lane = 5000; break;     // DDR
    case 4: lane = 10000; break;    // QDR
    case 8: lane = 10000; break;    // FDR10
    case 16: lane = 14000; break;   // FDR
    case 32: lane = 25000; break;   // EDR
    case 64: lane = 50000; break;   // HDR
    case 128: lane = 100000; break; // NDR
    case 256: lane = 200000; break; // XDR
    default: break;                 // 1 = SDR, or unknown
  }
  int lanes = 1;
  switch (activeWidth) {
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
  }
  return lane * lanes;
}

namespace {

std::string portName(const PortState& p) { return p.dev + ":" + std::to_string(p.port); }

std::string joinNotes(const std::vector<std::string>& notes) {
  std::string s;
  for (size_t i = 0; i < notes.size(); ++i) s += (i ? ", " : "") + notes[i];
  return s;
}

}  // namespace

Decision decide(const Discovery& found, const HcaFilter& filter, bool disabled, int forcedGidIndex,
                const GidFilter& gidFilter) {
  Decision d;
  if (disabled) {
    d.reason = "IB disabled by WEFT_IB_DISABLE";
    return d;
  }
  if (!found.verbsLoaded) {
    d.reason = "no IB: libibverbs not available (" + found.loadError + ")";
    return d;
  }
  if (found.ports.empty()) {
    d.reason = "no IB device";
    return d;
  }
  std::vector<const PortState*> kept;
  for (const auto& p : found.ports)
    if (hcaFilterAccepts(filter, p.dev, p.port)) kept.push_back(&p);
  if (kept.empty()) {
    d.reason = "all IB ports filtered by WEFT_IB_HCA=\"" + filter.spec + "\"";
    return d;
  }
  std::vector<std::string> down, noGid;
  for (const PortState* p : kept) {
    if (!p->active) {
      down.push_back(portName(*p) + " " + (p->stateName.empty() ? "not active" : p->stateName));
      continue;
    }
    if (p->linkLayer == LinkLayer::Unknown) {
      down.push_back(portName(*p) + " unknown link layer");
      continue;
    }
    GidChoice g = selectGid(p->gids, p->linkLayer == LinkLayer::Ethernet, forcedGidIndex, gidFilter);
    if (!g.ok) {
      noGid.push_back(portName(*p) + ": " + g.reason);
      continue;
    }
    d.usable.push_back(*p);
    d.gid.push_back(g);
  }
  if (d.usable.empty()) {
    if (!noGid.empty())
      d.reason = "GID not found (" + joinNotes(noGid) + (down.empty() ? "" : "; " + joinNotes(down)) + ")";
    else
      d.reason = "port down (" + joinNotes(down) + ")";
    return d;
  }
  // Fastest first; ties keep discovery order (device name, then port).
  std::vector<size_t> order(d.usable.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return d.usable[a].speedMbps > d.usable[b].speedMbps; });
  Decision sorted;
  sorted.useIb = true;
  for (size_t i : order) {
    sorted.usable.push_back(d.usable[i]);
    sorted.gid.push_back(d.gid[i]);
  }
  std::string list;
  for (size_t i = 0; i < sorted.usable.size(); ++i) {
    const auto& p = sorted.usable[i];
    list += (i ? ", " : "") + portName(p) + "/" + linkLayerName(p.linkLayer) + "/" + std::to_string(p.speedMbps) + "Mbps";
  }
  sorted.reason = "usable IB ports: " + list;
  return sorted;
}

namespace {

void checkRange(const char* name, int v, int lo, int hi) {
  if (v < lo || v > hi) raise(weftInvalidArgument, "%s=%d is out of range %d..%d", name, v, lo, hi);
}

}  // namespace

GidFilter IbConfig::gidFilter() const {
  GidFilter f;
  f.roceVersion = roceVersion;
  f.family = parseAddrFamily(addrFamily);
  f.range = parseAddrRange(addrRange);
  if (f.family && f.range.set && (f.family == 4) != f.range.v4)
    raise(weftInvalidArgument, "WEFT_IB_ADDR_FAMILY=%s and WEFT_IB_ADDR_RANGE=%s name different address families",
          addrFamily.c_str(), addrRange.c_str());
  return f;
}

void validateIbConfig(const IbConfig& c) {
  checkRange("WEFT_IB_GID_INDEX", c.gidIndex, -1, 255);
  checkRange("WEFT_IB_TC", c.trafficClass, 0, 255);
  checkRange("WEFT_IB_SL", c.serviceLevel, 0, 15);
  // 0 would mean "wait forever" to the HCA: a dead peer must become an
  // error, never a hang, so it is refused.
  checkRange("WEFT_IB_TIMEOUT", c.timeout, 1, 31);
  checkRange("WEFT_IB_RETRY_CNT", c.retryCount, 0, 7);
  checkRange("WEFT_IB_QPS_PER_CONNECTION", c.qpsPerConnection, 1, static_cast<int>(kIbMaxQps));
  checkRange("WEFT_IB_MAX_NICS", c.maxNics, 0, 64);
  checkRange("WEFT_IB_ROCE_VERSION", c.roceVersion, 0, 2);
  checkRange("WEFT_IB_PKEY", c.pkeyIndex, 0, 65535);
  (void)c.gidFilter();  // a malformed family or range is an error even on IB ports
}

IbConfig readIbConfig() {
  IbConfig c;
  c.disable = settings::get(settings::kIbDisable);
  c.hca = settings::get(settings::kIbHca).value_or("");
  c.gidIndex = static_cast<int>(settings::get(settings::kIbGidIndex));
  c.trafficClass = static_cast<int>(settings::get(settings::kIbTc));
  c.serviceLevel = static_cast<int>(settings::get(settings::kIbSl));
  c.timeout = static_cast<int>(settings::get(settings::kIbTimeout));
  c.retryCount = static_cast<int>(settings::get(settings::kIbRetryCnt));
  c.qpsPerConnection = static_cast<int>(settings::get(settings::kIbQpsPerConnection));
  c.maxNics = static_cast<int>(settings::get(settings::kIbMaxNics));
  c.roceVersion = static_cast<int>(settings::get(settings::kIbRoceVersion));
  c.addrFamily = settings::get(settings::kIbAddrFamily).value_or("");
  c.addrRange = settings::get(settings::kIbAddrRange).value_or("");
  c.pkeyIndex = static_cast<int>(settings::get(settings::kIbPkey));
  validateIbConfig(c);
  return c;
}

}  // namespace weft::ib
