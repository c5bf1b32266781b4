#include "transports/ib/ib_discovery.h"

#include <fstream>
#include <sstream>

#include "src/util/log.h"
#include "transports/ib/verbs_loader.h"

namespace weft::ib {

namespace {

// The GID type is not in ibv_query_gid's answer; the kernel publishes it in
// sysfs. Unreadable (old kernel, IB port): v1 semantics.
GidType readGidType(const std::string& dev, int port, int index) {
  std::ostringstream path;
  path << "/sys/class/infiniband/" << dev << "/ports/" << port << "/gid_attrs/types/" << index;
  std::ifstream in(path.str());
  std::string text;
  if (!in || !std::getline(in, text)) return GidType::IbRoceV1;
  return parseGidType(text);
}

LinkLayer linkLayerOf(uint8_t ll) {
  switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND:
    case IBV_LINK_LAYER_UNSPECIFIED:  // drivers older than link-layer reporting were IB
      return LinkLayer::InfiniBand;
    case IBV_LINK_LAYER_ETHERNET: return LinkLayer::Ethernet;
    default: return LinkLayer::Unknown;
  }
}

void discoverDevice(const Verbs& v, ibv_device* device, Discovery& out) {
  std::string name = v.getDeviceName(device);
  ibv_context* ctx = v.openDevice(device);
  if (!ctx) {
    WEFT_INFO(kNet | kInit, "NET/IB: cannot open %s; skipped", name.c_str());
    return;
  }
  ibv_device_attr dattr{};
  if (v.queryDevice(ctx, &dattr) != 0) {
    WEFT_INFO(kNet | kInit, "NET/IB: ibv_query_device(%s) failed; skipped", name.c_str());
    v.closeDevice(ctx);
    return;
  }
  for (int port = 1; port <= dattr.phys_port_cnt; ++port) {
    ibv_port_attr pattr{};
    if (v.queryPort(ctx, static_cast<uint8_t>(port), &pattr) != 0) continue;
    PortState s;
    s.dev = name;
    s.port = port;
    s.active = pattr.state == IBV_PORT_ACTIVE;
    // "PORT_DOWN" -> "DOWN": the reason text already says it is a port.
    s.stateName = v.portStateStr(pattr.state);
    if (s.stateName.rfind("PORT_", 0) == 0) s.stateName = s.stateName.substr(5);
    s.linkLayer = linkLayerOf(pattr.link_layer);
    s.speedMbps = portSpeedMbps(pattr.active_speed, pattr.active_width);
    if (s.active) {
      int n = pattr.gid_tbl_len < 256 ? pattr.gid_tbl_len : 256;
      for (int i = 0; i < n; ++i) {
        ibv_gid gid{};
        if (v.queryGid(ctx, static_cast<uint8_t>(port), i, &gid) != 0) continue;
        GidEntry e;
        e.index = i;
        for (int b = 0; b < 16; ++b) e.gid[b] = gid.raw[b];
        if (gidIsZero(e.gid)) continue;
        e.type = readGidType(name, port, i);
        s.gids.push_back(e);
      }
    }
    WEFT_INFO(kNet | kInit, "NET/IB: found %s:%d %s %s %d Mbps, %zu GIDs", name.c_str(), port, s.stateName.c_str(),
              linkLayerName(s.linkLayer), s.speedMbps, s.gids.size());
    out.ports.push_back(std::move(s));
  }
  v.closeDevice(ctx);
}

}  // namespace

Discovery discoverPorts() {
  Discovery d;
  const Verbs* v = loadVerbs(&d.loadError);
  if (!v) return d;
  d.verbsLoaded = true;
  int n = 0;
  ibv_device** list = v->getDeviceList(&n);
  if (!list) return d;  // no devices, or the kernel modules are absent
  for (int i = 0; i < n; ++i) discoverDevice(*v, list[i], d);
  v->freeDeviceList(list);
  return d;
}

}  // namespace weft::ib
