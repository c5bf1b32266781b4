// The IB transport with verbs: which port this process uses (discovery of
// the HCAs' ports, then the decision of ib_select.h) and the connections
// over it (ib_connection.h).
#include "transports/ib/ib_transport.h"

#include <atomic>
#include <mutex>
#include <optional>

#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/ib_connection.h"
#include "transports/ib/ib_device.h"
#include "transports/ib/ib_discovery.h"
#include "transports/ib/flush_schedule.h"
#include "transports/ib/ib_select.h"
#include "transports/ib/nic_choice.h"
#include "transports/ib/verbs_loader.h"

namespace weft {
namespace ib {

namespace {

// Finds the HCAs and ports of this machine through verbs (and sysfs for GID
// types). Never throws for "nothing there": that is a Discovery with no
// ports, and the decision (ib_select.h) turns it into a reason.
Discovery discoverPorts() {
  Discovery d;
  const Verbs* v = loadVerbs(&d.loadError);
  if (!v) return d;
  return discoverPortsWith(*v);
}

}  // namespace
}  // namespace ib

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
  c.decision = ib::decide(found, filter, c.cfg.disable, c.cfg.gidIndex, c.cfg.gidFilter());
  return c;
}

// The ports a rank's connections use (nic_choice.h): the closest to its
// GPU (or NUMA node), spread by local rank, several over its channels.
ib::NicChoice nicsFor(const Choice& c, int cudaDev, int localRank) {
  ib::NicDistances dist = localNicDistances(cudaDev, c.decision.usable);
  ib::NicChoiceInput in;
  in.locality = dist.locality;
  in.localRank = localRank;
  in.maxNics = c.cfg.maxNics;
  for (size_t i = 0; i < c.decision.usable.size(); ++i) {
    const ib::PortState& p = c.decision.usable[i];
    in.ports.push_back({p.dev + ":" + std::to_string(p.port), p.linkLayer, p.speedMbps, dist.distance[i]});
  }
  return ib::chooseNics(in);
}

ib::IbPortChoice portAt(const Choice& c, int index) {
  return ib::IbPortChoice{c.decision.usable[index], c.decision.gid[index].index, c.decision.gid[index].type};
}

// The rank's index among the ranks of its host.
int localRankOf(const ConnectContext& ctx) {
  int local = 0;
  for (int r = 0; r < ctx.rank; ++r)
    if ((*ctx.peers)[r].hostHash == ctx.self().hostHash) ++local;
  return local;
}

class IbTransport : public ib::IbTransportBase {
 public:
  std::unique_ptr<Connection> connect(ConnectContext& ctx, int peer, uint64_t tag, bool isSender,
                                      const ib::DevicePlacement* device) override {
    const Choice& c = choice();
    if (!c.decision.useIb)
      raise(weftInvalidUsage, "IB connection %s rank %d requested, but IB is not usable: %s", isSender ? "to" : "from",
            peer, c.decision.reason.c_str());
    const ib::NicChoice& nics = nicChoice(ctx, c);
    const int conn = connectTagConn(tag);
    const int index = ib::nicForChannel(nics, conn);
    ib::IbPortChoice port = portAt(c, index);
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d channel %d uses %s:%d, GID %s", ctx.rank, conn, port.port.dev.c_str(),
              port.port.port, c.decision.gid[index].reason.c_str());
    return ib::connectIb(ctx, peer, tag, isSender, port, c.cfg, device);
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

  // Once per communicator, logged with its reason.
  const ib::NicChoice& nicChoice(const ConnectContext& ctx, const Choice& c) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!nics_) {
      nics_ = nicsFor(c, ctx.self().cudaDev, localRankOf(ctx));
      const ib::IbPortChoice first = portAt(c, nics_->rails[0]);
      WEFT_INFO(kNet | kInit, "NET/IB: rank %d uses %s:%d%s: %s", ctx.rank, first.port.dev.c_str(), first.port.port,
                nics_->rails.size() > 1 ? " and more over its channels" : "", nics_->reason.c_str());
    }
    return *nics_;
  }

  mutable std::mutex mu_;
  mutable std::optional<Choice> choice_;
  mutable std::optional<ib::NicChoice> nics_;
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

ib::LinkLayer ibRankLinkLayer(int cudaDev) {
  try {
    Choice c = choose();
    return c.decision.useIb ? nicsFor(c, cudaDev, 0).linkLayer : ib::LinkLayer::Unknown;
  } catch (const Error&) {
    return ib::LinkLayer::Unknown;
  }
}

ib::GdrDecision ibDeviceGdr(int rank, int cudaDev, const NicDistanceFn& distance) {
  const ib::GdrSettings settings = ib::readGdrSettings();
  Choice c = choose();
  if (!c.decision.useIb) return ib::GdrDecision::staged("no usable IB: " + c.decision.reason);
  // The primary port of local rank 0: every rail of a rank is at the same
  // distance, of the same speed and link layer, so any stands for the rest.
  (void)rank;
  ib::IbPortChoice port = portAt(c, nicsFor(c, cudaDev, 0).rails[0]);
  std::optional<ib::PciDistance> d = distance ? distance(port.port.dev, port.port.port) : std::nullopt;
  const ib::GdrFacts facts = ib::probeGdr(port.port.dev, port.port.port, cudaDev, d);
  ib::GdrDecision g = ib::decideGdr(settings, facts);
  const ib::FlushDecision flush = ib::decideFlush(settings.flushDisabled, cudaDev, facts.ccMajor, facts.ccMinor);
  g.flush = flush.flush;
  g.flushReason = flush.reason;
  return g;
}

}  // namespace weft
