// Discovery's calls into libibverbs (transports/ib/ib_discovery.cc), every
// answer taken off the input: the harness is the verbs library. Its table
// (a weft::ib::Verbs, as loadVerbs fills it from dlopen) answers each call
// with the next input bytes, in the order discovery makes the calls:
//   ibv_get_device_list: a null list, or 0-8 devices and a reported count
//     (the list's length, more than it, or negative);
//   ibv_get_device_name: a name (any bytes) or null;
//   ibv_open_device: a context or null; ibv_query_device: a status and
//     phys_port_cnt (0-255);
//   ibv_query_port, per port: a status, state (0-7: the C++ range of
//     enum ibv_port_state), link_layer, active_speed, active_width (any
//     byte), gid_tbl_len (any int);
//   ibv_port_state_str: a text (any bytes) or null;
//   ibv_query_gid, per entry read: a status and 16 bytes; ibv_query_gid_ex
//     (present or not, per input: without it discovery reads sysfs): a
//     status and gid_type (any uint32).
// The WEFT_IB_* settings come first (ib_decision_check.h), then the
// presence of ibv_query_gid_ex. After discovery, the query a connection
// makes of its port when it opens (queryOpenedPort: the port may have gone
// down since) runs on a context of its own, on the decision's first port
// and GID index (or, without one, a port and index from the input), with a
// WEFT_IB_PKEY index from the input and the answers:
//   ibv_query_port: a status, state (0-7), pkey_tbl_len (any uint16),
//     lid and active_mtu;
//   ibv_port_state_str: a text or null; ibv_query_pkey, present or not: a
//     status and the key; ibv_query_gid: a status and 16 bytes.
// It succeeds exactly when the port answered active with the index within
// its table and the GID answered, and then returns those answers; it asks
// the state's text only of a port not active and the key and GID only of
// one that passed, at the indices given; a failure is a weft::Error of
// weftSystemError (weftInvalidArgument for the index) whose text names the
// port and the state's text, or "inactive" for a null one. Invariants: discovery calls only with
// what the library gave it (listed devices, open contexts, ports up to
// phys_port_cnt, GID indices below the table length and 256, GIDs of
// active ports only) and never past the list's terminating null; it closes
// every context it opened and frees the list once; its ports are exactly
// the successful ibv_query_port answers, in order, each with the device's
// name and the codes as ib_facts.h reads them, and GIDs exactly the
// successful non-zero answers with the type ibv_query_gid_ex gave; the
// decision over them holds ib_decision_check.h's invariants.
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <deque>
#include <map>
#include <memory>
#include <tuple>

#include "src/util/error.h"
#include "tests/fuzz/ib_decision_check.h"
#include "transports/ib/ib_discovery.h"
#include "transports/ib/ib_facts.h"

using namespace weft;
using namespace weft::ib;

namespace {

struct GidAnswer {
  bool ok = false;
  Gid gid{};
  bool exOk = false;  // ibv_query_gid_ex answered (and with exType)
  uint32_t exType = 0;
};

struct PortAnswer {
  int ctx = 0;  // serial of the context it was asked on
  int port = 0;
  ibv_port_attr attr{};
  std::map<int, GidAnswer> gids;  // by index
};

struct OpenContext {
  std::unique_ptr<ibv_context> ctx;
  int device = 0;
  int ports = -1;  // phys_port_cnt once ibv_query_device answered
  bool closed = false;
};

// The library's state for one input.
struct FakeLibrary {
  explicit FakeLibrary(fuzz::Reader& r) : in(r) {}
  fuzz::Reader& in;
  std::vector<ibv_device> devices;
  std::unique_ptr<ibv_device*[]> list;  // devices.size() entries and a null
  bool listFreed = false;
  std::vector<std::string> names;       // by device, the last name answered
  std::vector<OpenContext> contexts;    // by serial
  std::vector<PortAnswer> ports;        // successful ibv_query_port answers, in order
  std::deque<std::string> texts;        // what ibv_port_state_str returned
};

FakeLibrary* gLib = nullptr;

int deviceIndex(ibv_device* d) {
  for (size_t i = 0; i < gLib->devices.size(); ++i)
    if (d == &gLib->devices[i]) return static_cast<int>(i);
  fprintf(stderr, "discovery passed a device the library did not list\n");
  abort();
}

OpenContext& contextOf(ibv_context* c) {
  for (OpenContext& o : gLib->contexts)
    if (o.ctx.get() == c) {
      WEFT_FUZZ_CHECK(!o.closed);
      return o;
    }
  fprintf(stderr, "discovery passed a context the library did not open\n");
  abort();
}

ibv_device** getDeviceList(int* num) {
  WEFT_FUZZ_CHECK(!gLib->list);  // asked once
  const uint8_t how = gLib->in.byte();
  if (how == 0xff) return nullptr;
  const size_t n = how % 9;
  gLib->devices.resize(n);
  gLib->names.resize(n);
  gLib->list.reset(new ibv_device*[n + 1]);
  for (size_t i = 0; i < n; ++i) gLib->list[i] = &gLib->devices[i];
  gLib->list[n] = nullptr;
  *num = static_cast<int>(n);
  if (how & 0x40) *num += gLib->in.byte();  // more than the list holds
  if (how & 0x80) *num = -static_cast<int>(gLib->in.byte());
  return gLib->list.get();
}

void freeDeviceList(ibv_device** list) {
  WEFT_FUZZ_CHECK(list && list == gLib->list.get() && !gLib->listFreed);
  gLib->listFreed = true;
}

const char* getDeviceName(ibv_device* d) {
  const int i = deviceIndex(d);
  if (gLib->in.byte() == 0xff) return nullptr;
  gLib->names[i] = gLib->in.shortString().c_str();  // a C string ends at its first null
  return gLib->names[i].c_str();
}

ibv_context* openDevice(ibv_device* d) {
  const int i = deviceIndex(d);
  if (gLib->in.byte() & 1) return nullptr;
  OpenContext& o = gLib->contexts.emplace_back();
  o.ctx = std::make_unique<ibv_context>();
  o.ctx->device = d;
  o.device = i;
  return o.ctx.get();
}

int closeDevice(ibv_context* c) {
  contextOf(c).closed = true;
  return 0;
}

int queryDevice(ibv_context* c, ibv_device_attr* attr) {
  OpenContext& o = contextOf(c);
  const uint8_t status = gLib->in.byte();
  const uint8_t ports = gLib->in.byte();
  if (status >= 0xf0) return status & 0xf;
  *attr = ibv_device_attr{};
  attr->phys_port_cnt = ports;
  o.ports = ports;
  return 0;
}

int queryPort(ibv_context* c, uint8_t port, ibv_port_attr* attr) {
  OpenContext& o = contextOf(c);
  WEFT_FUZZ_CHECK(port >= 1 && port <= o.ports);
  fuzz::Reader& in = gLib->in;
  if (in.byte() >= 0xf0) return -1;
  PortAnswer a;
  a.ctx = static_cast<int>(&o - gLib->contexts.data());
  a.port = port;
  a.attr.state = static_cast<ibv_port_state>(in.byte() & 7);
  a.attr.link_layer = in.byte();
  a.attr.active_speed = in.byte();
  a.attr.active_width = in.byte();
  a.attr.gid_tbl_len = in.take<int32_t>();
  *attr = a.attr;
  gLib->ports.push_back(a);
  return 0;
}

const char* portStateStr(ibv_port_state) {
  if (gLib->in.byte() == 0xff) return nullptr;
  return gLib->texts.emplace_back(gLib->in.shortString()).c_str();
}

// The latest answer for `port` on `c`: the port whose GIDs are read.
PortAnswer& portBeingRead(ibv_context* c, uint32_t port, uint32_t index) {
  OpenContext& o = contextOf(c);
  const int serial = static_cast<int>(&o - gLib->contexts.data());
  PortAnswer* found = nullptr;
  for (PortAnswer& p : gLib->ports)
    if (p.ctx == serial && static_cast<uint32_t>(p.port) == port) found = &p;
  WEFT_FUZZ_CHECK(found);  // a port that answered ibv_query_port
  PortAnswer& p = *found;
  WEFT_FUZZ_CHECK(p.attr.state == IBV_PORT_ACTIVE);
  WEFT_FUZZ_CHECK(static_cast<int>(index) < p.attr.gid_tbl_len && index < 256);
  return p;
}

int queryGid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  WEFT_FUZZ_CHECK(index >= 0);
  PortAnswer& p = portBeingRead(c, port, static_cast<uint32_t>(index));
  GidAnswer& a = p.gids[index];
  WEFT_FUZZ_CHECK(!a.ok);  // read once
  if (gLib->in.byte() >= 0xf0) return -1;
  const std::vector<uint8_t> raw = gLib->in.bytes(16);
  std::copy(raw.begin(), raw.end(), a.gid.begin());
  memcpy(gid->raw, a.gid.data(), 16);
  a.ok = true;
  return 0;
}

int queryGidEx(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t /*flags*/,
               size_t entrySize) {
  PortAnswer& p = portBeingRead(c, port, index);
  WEFT_FUZZ_CHECK(entrySize == sizeof(ibv_gid_entry));
  GidAnswer& a = p.gids[static_cast<int>(index)];
  WEFT_FUZZ_CHECK(a.ok && !a.exOk);  // after ibv_query_gid, for a GID discovery keeps
  if (gLib->in.byte() >= 0xf0) return -1;
  *entry = ibv_gid_entry{};
  memcpy(entry->gid.raw, a.gid.data(), 16);
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = gLib->in.take<uint32_t>();
  a.exOk = true;
  a.exType = entry->gid_type;
  return 0;
}

Verbs fakeVerbs(bool withGidEx) {
  Verbs v;
  v.getDeviceList = getDeviceList;
  v.freeDeviceList = freeDeviceList;
  v.getDeviceName = getDeviceName;
  v.openDevice = openDevice;
  v.closeDevice = closeDevice;
  v.queryDevice = queryDevice;
  v.queryPort = queryPort;
  v.queryGid = queryGid;
  v.portStateStr = portStateStr;
  if (withGidEx) v.queryGidEx = queryGidEx;
  return v;
}

// Discovery's ports against the library's answers.
void checkPorts(const Discovery& found, bool withGidEx) {
  WEFT_FUZZ_CHECK(found.verbsLoaded);
  WEFT_FUZZ_CHECK(found.ports.size() == gLib->ports.size());
  for (size_t i = 0; i < found.ports.size(); ++i) {
    const PortState& s = found.ports[i];
    const PortAnswer& a = gLib->ports[i];
    WEFT_FUZZ_CHECK(s.dev == gLib->names[gLib->contexts[a.ctx].device] && s.port == a.port);
    WEFT_FUZZ_CHECK(s.active == (a.attr.state == IBV_PORT_ACTIVE));
    WEFT_FUZZ_CHECK(s.linkLayer == linkLayerOfVerbsCode(a.attr.link_layer));
    WEFT_FUZZ_CHECK(s.speedMbps == portSpeedMbps(a.attr.active_speed, a.attr.active_width) && s.speedMbps > 0);
    size_t kept = 0;
    for (const auto& [index, g] : a.gids)
      if (g.ok && !gidIsZero(g.gid)) ++kept;
    WEFT_FUZZ_CHECK(s.gids.size() == kept);
    for (const GidEntry& e : s.gids) {
      auto it = a.gids.find(e.index);
      WEFT_FUZZ_CHECK(it != a.gids.end() && it->second.ok && it->second.gid == e.gid && !gidIsZero(e.gid));
      if (withGidEx && it->second.exOk)
        WEFT_FUZZ_CHECK(e.type == (it->second.exType == IBV_GID_TYPE_ROCE_V2 ? GidType::RoceV2 : GidType::IbRoceV1));
    }
  }
}

// The library's answers to the connection's port query (queryOpenedPort).
struct ReopenAnswers {
  explicit ReopenAnswers(fuzz::Reader& r) : in(r) {}
  fuzz::Reader& in;
  ibv_context ctx{};
  int port = 0;
  bool portOk = false;
  ibv_port_attr attr{};
  int stateAsked = 0;
  bool stateNull = false;
  std::string stateText;
  int pkeyAsked = 0, pkeyIndexAsked = -1;
  bool pkeyOk = false;
  uint16_t pkeyRaw = 0;
  int gidAsked = 0, gidIndexAsked = -1;
  bool gidOk = false;
  ibv_gid gid{};
};

ReopenAnswers* gReopen = nullptr;

int reopenQueryPort(ibv_context* c, uint8_t port, ibv_port_attr* attr) {
  ReopenAnswers& r = *gReopen;
  WEFT_FUZZ_CHECK(c == &r.ctx && port == static_cast<uint8_t>(r.port) && !r.portOk);
  if (r.in.byte() >= 0xf0) return -1;
  r.attr.state = static_cast<ibv_port_state>(r.in.byte() & 7);
  r.attr.pkey_tbl_len = r.in.take<uint16_t>();
  r.attr.lid = r.in.take<uint16_t>();
  r.attr.active_mtu = static_cast<ibv_mtu>(r.in.byte() & 7);
  r.portOk = true;
  *attr = r.attr;
  return 0;
}

const char* reopenStateStr(ibv_port_state state) {
  ReopenAnswers& r = *gReopen;
  WEFT_FUZZ_CHECK(state == r.attr.state);
  ++r.stateAsked;
  r.stateNull = r.in.byte() == 0xff;
  if (r.stateNull) return nullptr;
  r.stateText = r.in.shortString();
  return r.stateText.c_str();
}

int reopenQueryPkey(ibv_context* c, uint8_t port, int index, __be16* pkey) {
  ReopenAnswers& r = *gReopen;
  WEFT_FUZZ_CHECK(c == &r.ctx && port == static_cast<uint8_t>(r.port));
  ++r.pkeyAsked;
  r.pkeyIndexAsked = index;
  if (r.in.byte() >= 0xf0) return -1;
  r.pkeyRaw = r.in.take<uint16_t>();
  *pkey = r.pkeyRaw;
  r.pkeyOk = true;
  return 0;
}

int reopenQueryGid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  ReopenAnswers& r = *gReopen;
  WEFT_FUZZ_CHECK(c == &r.ctx && port == static_cast<uint8_t>(r.port));
  ++r.gidAsked;
  r.gidIndexAsked = index;
  if (r.in.byte() >= 0xf0) return -1;
  const std::vector<uint8_t> raw = r.in.bytes(16);
  std::copy(raw.begin(), raw.end(), r.gid.raw);
  *gid = r.gid;
  r.gidOk = true;
  return 0;
}

// The connection's query of its port against the answers it was given.
void checkOpenedPort(fuzz::Reader& in, const Decision& d) {
  ReopenAnswers r(in);
  gReopen = &r;
  Verbs v;
  v.queryPort = reopenQueryPort;
  v.portStateStr = reopenStateStr;
  v.queryGid = reopenQueryGid;
  if (in.byte() & 1) v.queryPkey = reopenQueryPkey;
  r.port = d.useIb ? d.usable[0].port : in.byte();
  const int gidIndex = d.useIb ? d.gid[0].index : in.byte();
  const int pkeyIndex = in.byte();
  const std::string where = "fuzz_hca:" + std::to_string(r.port);
  bool ok = false;
  OpenedPort got;
  try {
    got = queryOpenedPort(v, &r.ctx, r.port, gidIndex, pkeyIndex, where);
    ok = true;
  } catch (const Error& e) {
    const std::string text = e.what();
    WEFT_FUZZ_CHECK(text.find(where) != std::string::npos);
    WEFT_FUZZ_CHECK(e.code() == (r.portOk && r.attr.state == IBV_PORT_ACTIVE && pkeyIndex >= r.attr.pkey_tbl_len
                                     ? weftInvalidArgument
                                     : weftSystemError));
    if (r.stateAsked)
      WEFT_FUZZ_CHECK(text.find(r.stateNull ? std::string("inactive") : std::string(r.stateText.c_str())) !=
                      std::string::npos);
  }
  const bool active = r.portOk && r.attr.state == IBV_PORT_ACTIVE;
  const bool passed = active && pkeyIndex < r.attr.pkey_tbl_len;
  WEFT_FUZZ_CHECK(ok == (passed && r.gidOk));
  WEFT_FUZZ_CHECK(r.stateAsked == (r.portOk && !active ? 1 : 0));
  WEFT_FUZZ_CHECK(r.pkeyAsked == (passed && v.queryPkey ? 1 : 0));
  if (r.pkeyAsked) WEFT_FUZZ_CHECK(r.pkeyIndexAsked == pkeyIndex);
  WEFT_FUZZ_CHECK(r.gidAsked == (passed ? 1 : 0));
  if (r.gidAsked) WEFT_FUZZ_CHECK(r.gidIndexAsked == gidIndex);
  if (ok) {
    WEFT_FUZZ_CHECK(got.num == static_cast<uint8_t>(r.port) && got.attr.state == IBV_PORT_ACTIVE);
    WEFT_FUZZ_CHECK(got.attr.pkey_tbl_len == r.attr.pkey_tbl_len && got.attr.lid == r.attr.lid &&
                    got.attr.active_mtu == r.attr.active_mtu);
    WEFT_FUZZ_CHECK(memcmp(got.gid.raw, r.gid.raw, 16) == 0);
    WEFT_FUZZ_CHECK(got.pkey == (r.pkeyOk ? ntohs(r.pkeyRaw) : 0));
  }
  gReopen = nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const fuzz::IbSettings settings = fuzz::readIbSettings(in);
  const bool withGidEx = in.byte() & 1;
  FakeLibrary lib(in);
  gLib = &lib;
  const Verbs v = fakeVerbs(withGidEx);
  const Discovery found = discoverPortsWith(v);
  for (const OpenContext& o : lib.contexts) WEFT_FUZZ_CHECK(o.closed);
  WEFT_FUZZ_CHECK(lib.listFreed == (lib.list != nullptr));
  checkPorts(found, withGidEx);
  const Decision d = fuzz::checkIbDecision(found, settings);
  gLib = nullptr;
  checkOpenedPort(in, d);
  return 0;
}
