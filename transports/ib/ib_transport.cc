#include "transports/ib/ib_transport.h"

#include <atomic>
#include <mutex>
#include <optional>

#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/gdr_config.h"
#include "transports/ib/gdr_probe.h"
#include "transports/ib/ib_config.h"
#include "transports/ib/ib_connection.h"
#include "transports/ib/ib_discovery.h"

namespace weft {

namespace {

struct Choice {
  ib::IbConfig cfg;
  ib::Decision decision;
};

// Reads the settings and the hardware. A malformed WEFT_IB_* value is an
// error the user must see, not a silent fallback.
Choice choose() {
  Choice c;
  c.cfg = ib::readIbConfig();
  ib::HcaFilter filter = ib::parseHcaFilter(c.cfg.hca);
  ib::Discovery found;
  if (!c.cfg.disable) found = ib::discoverPorts();
  c.decision = ib::decide(found, filter, c.cfg.disable, c.cfg.gidIndex);
  return c;
}

std::atomic<bool> warnedFallback{false};

// The port a rank's connections use: ranks of a host spread over its
// ports, the fastest first.
ib::IbPortChoice portFor(const Choice& c, int rank) {
  size_t i = static_cast<size_t>(rank) % c.decision.usable.size();
  return ib::IbPortChoice{c.decision.usable[i], c.decision.gid[i].index};
}

class IbTransport : public Transport {
 public:
  // device: connections for device-buffer traffic, this end's slots placed
  // as `device` says; null: host traffic.
  explicit IbTransport(std::optional<ib::DevicePlacement> device = std::nullopt) : device_(std::move(device)) {}

  const char* name() const override { return "IB"; }

  bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const override {
    const Choice& c = choice();
    if (c.decision.useIb) return true;
    if (!warnedFallback.exchange(true))
      WEFT_WARN("NET/IB: not using IB/RoCE: %s; falling back to sockets", c.decision.reason.c_str());
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d -> rank %d (%s) not via IB: %s", ctx.rank, peer,
              ctx.peer(peer).hostname, c.decision.reason.c_str());
    if (why) *why = c.decision.reason;
    return false;
  }

  std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) override {
    return connect(ctx, peer, tag, true);
  }
  std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) override {
    return connect(ctx, peer, tag, false);
  }

 private:
  const Choice& choice() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!choice_) {
      choice_ = choose();
      if (choice_->decision.useIb)
        WEFT_INFO(kNet | kInit, "NET/IB: %s", choice_->decision.reason.c_str());
    }
    return *choice_;
  }

  std::unique_ptr<Connection> connect(ConnectContext& ctx, int peer, uint64_t tag, bool isSender) {
    const Choice& c = choice();
    if (!c.decision.useIb)
      raise(weftInvalidUsage, "IB connection %s rank %d requested, but IB is not usable: %s", isSender ? "to" : "from",
            peer, c.decision.reason.c_str());
    ib::IbPortChoice port = portFor(c, ctx.rank);
    size_t i = static_cast<size_t>(ctx.rank) % c.decision.usable.size();
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d uses %s:%d, GID %s", ctx.rank, port.port.dev.c_str(), port.port.port,
              c.decision.gid[i].reason.c_str());
    return ib::connectIb(ctx, peer, tag, isSender, port, c.cfg, device_ ? &*device_ : nullptr);
  }

  std::optional<ib::DevicePlacement> device_;
  mutable std::mutex mu_;
  mutable std::optional<Choice> choice_;
};

}  // namespace

std::string ibUnusableReason() {
  try {
    Choice c = choose();
    return c.decision.useIb ? "" : c.decision.reason;
  } catch (const Error& e) {
    return e.what();
  }
}

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<IbTransport>(); }

std::unique_ptr<Transport> makeIbDeviceTransport(const ib::GdrDecision& local, int cudaDev) {
  ib::DevicePlacement p;
  p.gdr = local;
  p.cudaDev = cudaDev;
  p.flush = !ib::readGdrSettings().flushDisabled;
  return std::make_unique<IbTransport>(p);
}

ib::GdrDecision ibDeviceGdr(int rank, int cudaDev, const NicDistanceFn& distance) {
  const ib::GdrSettings settings = ib::readGdrSettings();
  Choice c = choose();
  if (!c.decision.useIb) return ib::GdrDecision{ib::GdrMode::Staged, "no usable IB: " + c.decision.reason};
  ib::IbPortChoice port = portFor(c, rank);
  std::optional<ib::PciDistance> d = distance ? distance(port.port.dev, port.port.port) : std::nullopt;
  return ib::decideGdr(settings, ib::probeGdr(port.port.dev, port.port.port, cudaDev, d));
}

}  // namespace weft
