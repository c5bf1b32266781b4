// Built when infiniband/verbs.h was absent at configure time: the transport
// exists so that the core's selection code is the same everywhere, and it
// says why it cannot connect.
#include "transports/ib/ib_transport.h"

#include "src/util/error.h"

namespace weft {

namespace {

class UnavailableIbTransport : public ib::IbTransportBase {
 public:
  std::unique_ptr<Connection> connect(ConnectContext&, int peer, uint64_t, bool isSender,
                                      const ib::DevicePlacement*) override {
    raise(weftInvalidUsage, "IB transport %s rank %d requested, but weft was built without infiniband/verbs.h",
          isSender ? "to" : "from", peer);
  }
};

}  // namespace

std::string ibUnusableReason() { return "no IB: weft was built without infiniband/verbs.h"; }

ib::LinkLayer ibRankLinkLayer(int /*cudaDev*/) { return ib::LinkLayer::Unknown; }

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<UnavailableIbTransport>(); }

ib::GdrDecision ibDeviceGdr(int, int, const NicDistanceFn&) {
  return ib::GdrDecision::staged("weft was built without infiniband/verbs.h");
}

}  // namespace weft
