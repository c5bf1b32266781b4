#include "transports/registry.h"

#include <strings.h>

#include "src/util/error.h"
#include "transports/ib/ib_transport.h"
#include "transports/p2p/p2p_transport.h"

namespace weft {

const std::vector<TransportEntry>& hostTransportList() {
  static const std::vector<TransportEntry> list = {
      {"SHM", false, false, makeShmTransport},
      {"IB", true, false, makeIbTransport},
      {"Socket", true, true, makeSocketTransport},
  };
  return list;
}

const std::vector<TransportEntry>& deviceTransportList() {
  static const std::vector<TransportEntry> list = {
      {"P2P", false, false, makeP2pTransport},
  };
  return list;
}

// The one that always works first, as the error messages have said.
std::string networkTransportNames() {
  std::string names;
  const auto& list = hostTransportList();
  for (auto e = list.rbegin(); e != list.rend(); ++e)
    if (e->network) names += (names.empty() ? "" : " or ") + std::string(e->name);
  return names;
}

bool isNetworkTransport(const std::string& name) {
  for (const TransportEntry& e : hostTransportList())
    if (e.network && !strcasecmp(e.name, name.c_str())) return true;
  return false;
}

TransportSet::TransportSet() {
  for (const TransportEntry& e : hostTransportList()) host_.push_back({&e, e.make()});
  for (const TransportEntry& e : deviceTransportList()) device_.push_back({&e, e.make()});
  if (host_.size() + device_.size() > static_cast<size_t>(kMaxTransportFacts))
    raise(weftInternalError, "%zu transports listed, PeerInfo has facts rows for %d", host_.size() + device_.size(),
          kMaxTransportFacts);
}

void TransportSet::publishFacts(int rank, int cudaDev, PeerInfo& self) {
  int row = 0;
  for (auto* members : {&host_, &device_})
    for (Member& m : *members) m.transport->publishFacts(TransportInit{rank, cudaDev, row++}, self);
}

TransportChoice chooseTransport(const std::vector<TransportEntry>& list, const std::string& forcedNet,
                                const std::function<bool(size_t, std::string*)>& canConnect) {
  TransportChoice c;
  auto add = [&c](const std::string& reason) {
    if (!reason.empty()) c.why += (c.why.empty() ? "" : ", ") + reason;
  };
  const char* forcedName = nullptr;  // the listed spelling of WEFT_NET
  for (const TransportEntry& e : list)
    if (e.network && !forcedNet.empty() && !strcasecmp(e.name, forcedNet.c_str())) forcedName = e.name;
  if (forcedName) c.forced = forcedName;
  for (size_t i = 0; i < list.size(); i++) {
    const TransportEntry& e = list[i];
    const bool forced = forcedName && e.name == forcedName;
    if (forcedName && e.network && !forced) {
      add(std::string("network forced to ") + forcedName);
      continue;
    }
    std::string why;
    const bool can = canConnect(i, &why);
    add(why);
    if (can) {
      c.index = static_cast<int>(i);
      c.warnFallback = e.lastResort && !forced;
      return c;
    }
    if (forced) {
      c.impossible = true;
      return c;
    }
  }
  return c;
}

}  // namespace weft
