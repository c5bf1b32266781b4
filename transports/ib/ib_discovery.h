// Discovery of this machine's HCA ports through a verbs table: devices,
// their ports, each active port's GIDs and GID types (ibv_query_gid_ex, or
// sysfs without it). Every value comes from the verbs library, a separate
// component that may be a stand-in (WEFT_IB_VERBS_LIB): a null text, a
// device count beyond its list, any code or length is read without trust.
// The table is a parameter so that the fuzz target (tests/fuzz/
// ib_discovery_fuzz.cc) can answer every call from its input.
#pragma once

#include "transports/ib/ib_select.h"
#include "transports/ib/verbs_loader.h"

namespace weft::ib {

// The ports of every device `v` lists. Never throws for "nothing there": a
// device that cannot be opened or queried is skipped with an INFO line,
// and the decision (ib_select.h) turns an empty result into a reason. Sets
// verbsLoaded; every device opened is closed, the list freed.
Discovery discoverPortsWith(const Verbs& v);

// The chosen port as a connection finds it when it opens (asked again:
// it may have gone down since discovery).
struct OpenedPort {
  uint8_t num = 0;
  ibv_port_attr attr{};
  ibv_gid gid{};
  uint16_t pkey = 0;  // at the WEFT_IB_PKEY index, host order; 0 when the library cannot say
};

// Queries port `port` of `ctx` through `v`: it must be active, have a
// partition key at `pkeyIndex` and give the GID at `gidIndex`. Throws
// weft::Error naming `where`: weftSystemError when a query fails or the
// port is not active (with the library's text for its state, which may be
// null), weftInvalidArgument when pkeyIndex is beyond the port's table.
// A parameter table, as discovery's, for the fuzz target.
OpenedPort queryOpenedPort(const Verbs& v, ibv_context* ctx, int port, int gidIndex, int pkeyIndex,
                           const std::string& where);

}  // namespace weft::ib
