// Built when infiniband/verbs.h was absent at configure time: the transport
// exists so that the core's selection code is the same everywhere, and it
// says why it cannot connect.
#include "transports/ib/ib_transport.h"

#include "src/util/error.h"

namespace weft {

namespace {

class UnavailableIbTransport : public Transport {
 public:
  const char* name() const override { return "IB"; }
  bool canConnect(const ConnectContext&, int, std::string* why) const override {
    if (why) *why = "no IB: weft was built without infiniband/verbs.h";
    return false;
  }
  std::unique_ptr<Connection> connectSend(ConnectContext&, int peer, uint64_t) override {
    raise(weftInvalidUsage, "IB transport to rank %d requested, but weft was built without infiniband/verbs.h", peer);
  }
  std::unique_ptr<Connection> connectRecv(ConnectContext&, int peer, uint64_t) override {
    raise(weftInvalidUsage, "IB transport from rank %d requested, but weft was built without infiniband/verbs.h", peer);
  }
};

}  // namespace

std::string ibUnusableReason() { return "no IB: weft was built without infiniband/verbs.h"; }

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<UnavailableIbTransport>(); }

std::unique_ptr<Transport> makeIbDeviceTransport(const ib::GdrDecision&, int) {
  return std::make_unique<UnavailableIbTransport>();
}

ib::GdrDecision ibDeviceGdr(int, int, const NicDistanceFn&) {
  return ib::GdrDecision{ib::GdrMode::Staged, "weft was built without infiniband/verbs.h"};
}

}  // namespace weft
