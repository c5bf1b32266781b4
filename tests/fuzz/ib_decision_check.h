// Shared by the IB fuzz targets (ib_facts, ib_discovery): the WEFT_IB_*
// texts read off the input, and the invariants of the port decision
// (ib_select.h's decide) over what discovery found.
#pragma once

#include <string>

#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"
#include "transports/ib/gdr_decision.h"
#include "transports/ib/gid_select.h"
#include "transports/ib/ib_hca_filter.h"
#include "transports/ib/ib_select.h"

namespace weft::fuzz {

// The settings' texts; a malformed one is a clear error (weft::Error) and
// the rest of the input runs with that setting unset.
struct IbSettings {
  ib::HcaFilter hca;
  ib::GidFilter gid;
  int forcedGid = -1;
  bool disabled = false;
};

template <class F>
void tryParse(F parse) {
  try {
    parse();
  } catch (const Error&) {
  }
}

// HCA filter, address family and range (short strings), RoCE version,
// forced GID index (int16, negative: none), the disable bit, GDR level.
inline IbSettings readIbSettings(Reader& in) {
  IbSettings s;
  const std::string hca = in.shortString(), family = in.shortString(), range = in.shortString();
  tryParse([&] { s.hca = ib::parseHcaFilter(hca); });
  tryParse([&] { s.gid.family = ib::parseAddrFamily(family); });
  tryParse([&] { s.gid.range = ib::parseAddrRange(range); });
  WEFT_FUZZ_CHECK(s.gid.range.bits >= 0 && s.gid.range.bits <= 128);
  s.gid.roceVersion = in.byte() % 3;
  const int16_t forced = in.take<int16_t>();
  s.forcedGid = forced < 0 ? -1 : forced;
  s.disabled = in.byte() & 1;
  const std::string level = in.shortString();
  tryParse([&] { WEFT_FUZZ_CHECK(static_cast<int>(ib::parseGdrLevel(level)) >= 0); });
  return s;
}

inline const ib::GidEntry* findGid(const ib::PortState& p, int index) {
  for (const ib::GidEntry& e : p.gids)
    if (e.index == index) return &e;
  return nullptr;
}

// A decision to use IB names only active, filter-accepted ports of a known
// link layer, fastest first, each with a GID of its own table. Returns it.
inline ib::Decision checkIbDecision(const ib::Discovery& found, const IbSettings& s) {
  const ib::Decision d = ib::decide(found, s.hca, s.disabled, s.forcedGid, s.gid);
  WEFT_FUZZ_CHECK(!d.reason.empty());
  WEFT_FUZZ_CHECK(d.usable.size() == d.gid.size());
  WEFT_FUZZ_CHECK(d.useIb == !d.usable.empty());
  if (!d.useIb) return d;
  WEFT_FUZZ_CHECK(!s.disabled && found.verbsLoaded);
  for (size_t i = 0; i < d.usable.size(); ++i) {
    const ib::PortState& p = d.usable[i];
    WEFT_FUZZ_CHECK(p.active && p.linkLayer != ib::LinkLayer::Unknown && ib::hcaFilterAccepts(s.hca, p.dev, p.port));
    WEFT_FUZZ_CHECK(d.gid[i].ok);
    const ib::GidEntry* e = findGid(p, d.gid[i].index);
    WEFT_FUZZ_CHECK(e && !ib::gidIsZero(e->gid) && e->type == d.gid[i].type);
    if (s.forcedGid >= 0) WEFT_FUZZ_CHECK(d.gid[i].index == s.forcedGid);
    if (i) WEFT_FUZZ_CHECK(d.usable[i - 1].speedMbps >= p.speedMbps);
  }
  return d;
}

}  // namespace weft::fuzz
