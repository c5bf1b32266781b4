// Discovery through a verbs table (ib_discovery.h).
#include "transports/ib/ib_discovery.h"

#include <arpa/inet.h>

#include <fstream>
#include <sstream>

#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/ib_facts.h"

namespace weft::ib {

namespace {

// The GID type is not in ibv_query_gid's answer; the kernel publishes it in
// sysfs. Unreadable (old kernel, IB port): v1 semantics.
GidType readSysfsGidType(const std::string& dev, int port, int index) {
  std::ostringstream path;
  path << "/sys/class/infiniband/" << dev << "/ports/" << port << "/gid_attrs/types/" << index;
  std::ifstream in(path.str());
  std::string text;
  if (!in || !std::getline(in, text)) return GidType::IbRoceV1;
  return parseGidType(text);
}

// ibv_query_gid_ex where libibverbs has it (no sysfs needed), else sysfs.
GidType readGidType(const Verbs& v, ibv_context* ctx, const std::string& dev, int port, int index) {
  if (v.queryGidEx) {
    ibv_gid_entry e{};
    if (v.queryGidEx(ctx, static_cast<uint32_t>(port), static_cast<uint32_t>(index), &e, 0, sizeof e) == 0)
      return e.gid_type == IBV_GID_TYPE_ROCE_V2 ? GidType::RoceV2 : GidType::IbRoceV1;
  }
  return readSysfsGidType(dev, port, index);
}

// linkLayerOfVerbsCode (ib_facts.h) reads these codes without verbs.h.
static_assert(IBV_LINK_LAYER_UNSPECIFIED == 0 && IBV_LINK_LAYER_INFINIBAND == 1 && IBV_LINK_LAYER_ETHERNET == 2);

// A text from the library; a stand-in may answer null.
std::string textOf(const char* s, const char* ifNull) { return s ? s : ifNull; }

// The GIDs of an active port: at most gidEntriesToRead of its table length,
// all-zero entries (unused slots) skipped.
void readGids(const Verbs& v, ibv_context* ctx, const ibv_port_attr& pattr, PortState& s) {
  const int n = gidEntriesToRead(pattr.gid_tbl_len);
  for (int i = 0; i < n; ++i) {
    ibv_gid gid{};
    if (v.queryGid(ctx, static_cast<uint8_t>(s.port), i, &gid) != 0) continue;
    GidEntry e;
    e.index = i;
    for (int b = 0; b < 16; ++b) e.gid[b] = gid.raw[b];
    if (gidIsZero(e.gid)) continue;
    e.type = readGidType(v, ctx, s.dev, s.port, i);
    s.gids.push_back(e);
  }
}

void discoverDevice(const Verbs& v, ibv_device* device, Discovery& out) {
  const char* rawName = v.getDeviceName(device);
  if (!rawName) {
    WEFT_INFO(kNet | kInit, "NET/IB: a device without a name (ibv_get_device_name answered null); skipped");
    return;
  }
  std::string name = rawName;
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
    s.stateName = portStateName(textOf(v.portStateStr(pattr.state), "unknown"));
    s.linkLayer = linkLayerOfVerbsCode(pattr.link_layer);
    s.speedMbps = portSpeedMbps(pattr.active_speed, pattr.active_width);
    if (s.active) readGids(v, ctx, pattr, s);
    WEFT_INFO(kNet | kInit, "NET/IB: found %s:%d %s %s %d Mbps, %zu GIDs", name.c_str(), port, s.stateName.c_str(),
              linkLayerName(s.linkLayer), s.speedMbps, s.gids.size());
    out.ports.push_back(std::move(s));
  }
  v.closeDevice(ctx);
}

}  // namespace

Discovery discoverPortsWith(const Verbs& v) {
  Discovery d;
  d.verbsLoaded = true;
  int n = 0;
  ibv_device** list = v.getDeviceList(&n);
  if (!list) return d;  // no devices, or the kernel modules are absent
  // The list ends with a null entry; a count beyond it is not read.
  for (int i = 0; i < n && list[i]; ++i) discoverDevice(v, list[i], d);
  v.freeDeviceList(list);
  return d;
}

OpenedPort queryOpenedPort(const Verbs& v, ibv_context* ctx, int port, int gidIndex, int pkeyIndex,
                           const std::string& where) {
  OpenedPort st;
  st.num = static_cast<uint8_t>(port);
  if (v.queryPort(ctx, st.num, &st.attr) != 0) raise(weftSystemError, "NET/IB: ibv_query_port(%s) failed", where.c_str());
  if (st.attr.state != IBV_PORT_ACTIVE) {
    // A verbs library other than rdma-core's may have no text for a state.
    const char* state = v.portStateStr(st.attr.state);
    raise(weftSystemError, "NET/IB: port %s went %s (state %d)", where.c_str(), state ? state : "inactive",
          int(st.attr.state));
  }
  if (pkeyIndex >= st.attr.pkey_tbl_len)
    raise(weftInvalidArgument, "NET/IB: WEFT_IB_PKEY=%d, but %s has %u partition keys (indices 0..%d)", pkeyIndex,
          where.c_str(), st.attr.pkey_tbl_len, st.attr.pkey_tbl_len - 1);
  __be16 pkey = 0;
  if (v.queryPkey && v.queryPkey(ctx, st.num, pkeyIndex, &pkey) == 0) st.pkey = ntohs(pkey);
  if (v.queryGid(ctx, st.num, gidIndex, &st.gid) != 0)
    raise(weftSystemError, "NET/IB: ibv_query_gid(%s, index %d) failed", where.c_str(), gidIndex);
  return st;
}

}  // namespace weft::ib
