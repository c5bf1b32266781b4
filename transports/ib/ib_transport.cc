#include "transports/ib/ib_transport.h"

#include "src/topology/paths.h"
#include "src/topology/detect.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/flush_schedule.h"

namespace weft {

ib::NicDistances localNicDistances(int cudaDev, const std::vector<ib::PortState>& ports) {
  const int numa = cudaDev < 0 ? topo::currentNumaNode() : -1;
  try {
    topo::LocalTopology local = topo::localTopology();
    return ib::nicDistances(local.system.get(), local.host, cudaDev, numa, ports);
  } catch (const Error& e) {
    WEFT_INFO(kNet | kGraph, "NET/IB: no topology to measure the distance to the IB ports: %s", e.what());
    return ib::nicDistances(nullptr, 0, cudaDev, numa, ports);
  }
}

ib::GdrDecision chooseDeviceGdr(int rank, int cudaDev, bool ibUsable) {
  (void)ib::readGdrSettings();
  if (!ibUsable) return ib::GdrDecision::staged("no usable IB on this rank");
  if (cudaDev < 0) return ib::GdrDecision::staged("no CUDA device on this rank");
  auto distance = [cudaDev](const std::string& dev, int port) -> std::optional<ib::PciDistance> {
    try {
      topo::LocalTopology local = topo::localTopology();
      auto path = topo::gpuNicPath(*local.system, local.host, cudaDev, dev, port);
      return path ? ib::pciDistanceOf(*path) : std::nullopt;
    } catch (const Error& e) {
      WEFT_INFO(kNet | kGraph, "NET/IB: no topology to measure GPU %d to %s:%d: %s", cudaDev, dev.c_str(), port,
                e.what());
      return std::nullopt;
    }
  };
  ib::GdrDecision d = ibDeviceGdr(rank, cudaDev, distance);
  if (d.mode == ib::GdrMode::Staged)
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d: GPU buffers over IB would be staged through host memory: %s", rank,
              d.reason.c_str());
  else
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d: GPU buffers over IB can use GPU Direct RDMA via %s (%s)", rank,
              ib::gdrModeName(d.mode), d.reason.c_str());
  return d;
}

namespace ib {

namespace {

// Device-buffer edges over IB: connections of their own, each end placing
// its slots in GPU or host memory by its own GPUDirect decision.
class IbDeviceTransport : public Transport {
 public:
  IbDeviceTransport(IbTransportBase& host, DevicePlacement placement) : host_(host), placement_(std::move(placement)) {}

  const char* name() const override { return "IB"; }
  bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const override {
    const IbFacts self = readFacts<IbFacts>(ctx.self(), host_.factsRow());
    const IbFacts other = readFacts<IbFacts>(ctx.peer(peer), host_.factsRow());
    return gdrCanJoin(self.gdrMode != 0, other.gdrMode != 0, why);
  }
  std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) override {
    return host_.connect(ctx, peer, tag, true, &placement_);
  }
  std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) override {
    return host_.connect(ctx, peer, tag, false, &placement_);
  }

 private:
  IbTransportBase& host_;
  DevicePlacement placement_;
};

}  // namespace

IbTransportBase::IbTransportBase() = default;
IbTransportBase::~IbTransportBase() = default;

void IbTransportBase::publishFacts(const TransportInit& init, PeerInfo& self) {
  factsRow_ = init.factsRow;
  problem_ = ibUnusableReason();
  IbFacts facts;
  facts.usable = problem_.empty() ? 1 : 0;
  if (facts.usable) facts.linkLayer = 1 + static_cast<int32_t>(ibRankLinkLayer(init.cudaDev));
  gdr_ = chooseDeviceGdr(init.rank, init.cudaDev, facts.usable != 0);
  facts.gdrMode = static_cast<int32_t>(gdr_.mode);
  writeFacts(self, factsRow_, facts);
  DevicePlacement placement;
  placement.gdr = gdr_;
  placement.cudaDev = init.cudaDev;
  // ibDeviceGdr decided the flush (decideFlush) when it probed the GPU;
  // other decisions are staged (no GPU slots, so no flush either way).
  const FlushDecision flush = gdr_.flushReason.empty()
                                  ? decideFlush(readGdrSettings().flushDisabled, init.cudaDev, -1, -1)
                                  : FlushDecision{gdr_.flush, gdr_.flushReason};
  placement.flush = flush.flush;
  placement.flushReason = flush.reason;
  device_ = std::make_unique<IbDeviceTransport>(*this, placement);
}

bool IbTransportBase::canConnect(const ConnectContext& ctx, int peer, std::string* why) const {
  return ibFactsJoin(readFacts<IbFacts>(ctx.self(), factsRow_), problem_, readFacts<IbFacts>(ctx.peer(peer), factsRow_),
                     peer, why);
}

void IbTransportBase::noteDeviceTrafficStaged(const ConnectContext& ctx, int peer, bool sending) const {
  logDeviceEdge(ctx.rank, peer, sending, gdr_);
}

}  // namespace ib
}  // namespace weft
