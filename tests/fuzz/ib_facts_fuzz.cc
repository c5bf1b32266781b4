// What the IB transport reads from outside the process, from one input
// (transports/ib/ib_facts.h and the pure parts it feeds):
//   the WEFT_IB_* texts (HCA filter, address family and range, GDR level)
//     and the forced GID index;
//   what discovery reads from verbs and sysfs: ports with their state text
//     and code, link-layer code, speed and width codes, GID table length,
//     GIDs and each GID's sysfs type text; then the decision (ib_select.h);
//   two PeerInfo facts rows (this rank's and a peer's);
//   two connection infos in wire form (this end's and the peer's; the
//     harness fixes their checksums so mutations reach the fields), checked
//     as a connecting end checks the peer's (connInfoMismatch).
// Layout: the readers below in the order LLVMFuzzerTestOneInput calls them
// (readIbSettings, readPort per port, checkFacts, checkConnInfos), each field
// off the input in turn (zeros once it runs out; texts length-prefixed). Invariants: a decision to use IB names
// only active, filter-accepted ports of a known link layer, fastest first,
// each with a GID of its own table; the facts join only two usable ends of
// the same link layer; an accepted connection info matches this end in
// every field the checks cover.
#include <cstdio>

#include "tests/fuzz/ib_decision_check.h"
#include "transports/ib/conn_info.h"
#include "transports/ib/ib_facts.h"

using namespace weft;
using namespace weft::ib;

namespace {

constexpr uint8_t kPortActive = 4;  // IBV_PORT_ACTIVE

// One port as discoverDevice (ib_discovery.cc) builds it from verbs'
// answers and sysfs (ib_discovery fuzzes those calls themselves).
PortState readPort(fuzz::Reader& in) {
  PortState p;
  p.dev = in.shortString();
  p.port = in.byte();
  p.active = in.byte() == kPortActive;
  p.stateName = portStateName(in.shortString());
  p.linkLayer = linkLayerOfVerbsCode(in.byte());
  const uint16_t speed = in.take<uint16_t>();
  p.speedMbps = portSpeedMbps(speed, in.byte());
  WEFT_FUZZ_CHECK(p.speedMbps > 0);
  const int entries = gidEntriesToRead(in.take<int16_t>());
  WEFT_FUZZ_CHECK(entries <= 256);
  const int listed = in.byte() % 9;
  for (int i = 0; i < listed && i < entries; ++i) {
    GidEntry e;
    e.index = i;
    const auto raw = in.bytes(16);
    std::copy(raw.begin(), raw.end(), e.gid.begin());
    e.type = parseGidType(in.shortString());
    if (!gidIsZero(e.gid)) p.gids.push_back(e);  // discovery skips empty entries
  }
  return p;
}

// A facts row as readFacts (transports/transport.h) copies it out of PeerInfo.
IbFacts readFactsRow(fuzz::Reader& in) {
  IbFacts f;
  f.usable = in.take<int32_t>();
  f.gdrMode = in.take<int32_t>();
  f.linkLayer = in.take<int32_t>();
  return f;
}

void checkFacts(fuzz::Reader& in) {
  const IbFacts self = readFactsRow(in), peer = readFactsRow(in);
  std::string why;
  const bool joins = ibFactsJoin(self, "fuzz: no port", peer, in.byte(), &why);
  WEFT_FUZZ_CHECK(!why.empty());
  if (joins) {
    const LinkLayer a = linkLayerFromFacts(self.linkLayer), b = linkLayerFromFacts(peer.linkLayer);
    WEFT_FUZZ_CHECK(self.usable && peer.usable);
    WEFT_FUZZ_CHECK(a == LinkLayer::Unknown || b == LinkLayer::Unknown || a == b);
  }
  std::string mine, theirs;
  WEFT_FUZZ_CHECK(gdrCanJoin(self.gdrMode != 0, peer.gdrMode != 0, &mine) ==
                  gdrCanJoin(peer.gdrMode != 0, self.gdrMode != 0, &theirs));
}

// A connection info in wire form with its checksum made right; false when
// decoding refuses it anyway.
bool readConnInfo(fuzz::Reader& in, ConnInfo* out) {
  std::vector<uint8_t> wire = in.bytes(connInfoWireBytes());
  wire.resize(connInfoWireBytes());
  const uint32_t crc = crc32(wire.data(), wire.size() - 4);
  memcpy(wire.data() + wire.size() - 4, &crc, 4);
  try {
    *out = decodeConnInfo(wire.data(), wire.size());
    return true;
  } catch (const Error&) {
    return false;
  }
}

void checkConnInfos(fuzz::Reader& in) {
  ConnInfo mine, remote;
  if (!readConnInfo(in, &mine) || !readConnInfo(in, &remote)) return;
  const ConnRole want = mine.role == ConnRole::Sender ? ConnRole::Receiver : ConnRole::Sender;
  const LinkLayer link = linkLayerOfVerbsCode(mine.linkLayer);
  const int pkeyIndex = in.byte();
  const ConnInfoRefusal r = connInfoMismatch(mine, remote, want, mine.dstRank, mine.srcRank, link, pkeyIndex);
  if (r.code != weftSuccess) {
    WEFT_FUZZ_CHECK(r.code == weftRemoteError || r.code == weftInvalidUsage);
    WEFT_FUZZ_CHECK(!r.why.empty());
    return;
  }
  WEFT_FUZZ_CHECK(connInfoPeerProblem(remote, want, mine.dstRank, mine.srcRank).empty());
  WEFT_FUZZ_CHECK(remote.usable && remote.role == want);
  WEFT_FUZZ_CHECK(remote.srcRank == mine.dstRank && remote.dstRank == mine.srcRank);
  WEFT_FUZZ_CHECK(remote.nQps == mine.nQps && remote.nQps >= 1 && remote.nQps <= kIbMaxQps);
  for (uint32_t q = 0; q < remote.nQps; ++q) WEFT_FUZZ_CHECK(remote.qpn[q] >= 2 && remote.qpn[q] <= 0xffffff);
  WEFT_FUZZ_CHECK(remote.nSlots == mine.nSlots && remote.slotBytes == mine.slotBytes);
  WEFT_FUZZ_CHECK(remote.linkLayer == mine.linkLayer && partitionProblem(mine.pkey, remote.pkey).empty());
  const bool roce = link == LinkLayer::Ethernet;
  const GidAddress a{mine.gid, gidTypeFromWire(mine.gidType), mine.subnetPrefix};
  const GidAddress b{remote.gid, gidTypeFromWire(remote.gidType), remote.subnetPrefix};
  WEFT_FUZZ_CHECK(gidPairProblem(roce, a, b).empty());
  if (roce) WEFT_FUZZ_CHECK(!gidIsZero(remote.gid));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const fuzz::IbSettings s = fuzz::readIbSettings(in);
  Discovery found;
  found.verbsLoaded = in.byte() & 1;
  if (!found.verbsLoaded) found.loadError = "fuzz: not loaded";
  const int nPorts = in.byte() % 5;
  for (int i = 0; i < nPorts; ++i) found.ports.push_back(readPort(in));
  fuzz::checkIbDecision(found, s);
  checkFacts(in);
  checkConnInfos(in);
  return 0;
}
