// The InfiniBand / RoCE transport: RC queue pairs, RDMA write-with-immediate
// of each posted slot into the same slot of the peer's registered FIFO, the
// peer's consumed counter written back as credits. See docs/ib.md.
//
// What needs verbs.h (finding ports, connecting) is in
// ib_transport_verbs.cc, or ib_transport_unavailable.cc when weft is built
// without it; what every rank tells its peers about IB (PeerInfo facts),
// the choice per pair and the GPUDirect RDMA decision are here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_facts.h"
#include "transports/ib/ib_select.h"
#include "transports/ib/nic_locality.h"
#include "transports/transport.h"

namespace weft {

// Always returns a transport. When libibverbs cannot be loaded, no port is
// usable or WEFT_IB_DISABLE is set, its canConnect says why (and the core
// falls back to sockets).
std::unique_ptr<Transport> makeIbTransport();

// Empty when this process can use IB (libibverbs loads and a port passes
// WEFT_IB_DISABLE, WEFT_IB_HCA, state and GID checks); else why not.
std::string ibUnusableReason();

// The link layer of the ports a rank with GPU cudaDev (-1: none) would use
// (nic_choice.h: it does not depend on the rank's place on its host);
// Unknown when IB is not usable.
ib::LinkLayer ibRankLinkLayer(int cudaDev);

// How far each port is from a rank with GPU cudaDev (-1: from the NUMA node
// the calling thread runs on), from this host's topology (detected or
// WEFT_TOPO_FILE); unknown distances where it cannot tell.
ib::NicDistances localNicDistances(int cudaDev, const std::vector<ib::PortState>& ports);

// GPU-NIC distance for an IB port ("mlx5_0", 1) of this host, or nullopt
// when the topology cannot tell.
using NicDistanceFn = std::function<std::optional<ib::PciDistance>(const std::string& dev, int port)>;

// How this rank's device-buffer traffic over IB would move: the port its
// connections use, what the GPU, libibverbs, the HCA and the kernel offer,
// the distance `distance` reports for that port, and the WEFT_GDR_* /
// WEFT_DMABUF_ENABLE / WEFT_NET_GDR_LEVEL settings. A malformed setting
// throws weftInvalidArgument; a missing capability is a Staged reason.
ib::GdrDecision ibDeviceGdr(int rank, int cudaDev, const NicDistanceFn& distance);

// This rank's GPUDirect RDMA decision, made once at init with the GPU-NIC
// distance from the host's topology (detected or WEFT_TOPO_FILE; when it
// cannot be had the decision says so). Throws weftInvalidArgument for a
// malformed WEFT_GDR_* / WEFT_DMABUF_ENABLE / WEFT_NET_GDR_LEVEL, whether
// or not this rank could use GPUDirect.
ib::GdrDecision chooseDeviceGdr(int rank, int cudaDev, bool ibUsable);

namespace ib {

// How a connection for device-buffer traffic places this end's slots.
struct DevicePlacement {
  GdrDecision gdr;    // Staged: host slots (mapped for the GPU by the device executor)
  int cudaDev = -1;   // where GPU slots are allocated
  bool flush = true;  // receiver with GPU slots: flush before posting (decideFlush)
  std::string flushReason;
};

// The IB transport's part that needs no verbs.h: its facts, its choice per
// pair and its device transport. The verbs build and the build without
// verbs.h differ only in connect().
class IbTransportBase : public Transport {
 public:
  IbTransportBase();
  ~IbTransportBase() override;

  const char* name() const override { return "IB"; }
  // Whether this process has a usable port, and its GPUDirect decision.
  void publishFacts(const TransportInit& init, PeerInfo& self) override;
  bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const override;
  std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) override {
    return connect(ctx, peer, tag, true, nullptr);
  }
  std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) override {
    return connect(ctx, peer, tag, false, nullptr);
  }
  // Device edges where either end can do GPUDirect RDMA (set at
  // publishFacts; null before).
  Transport* deviceTransport() const override { return device_.get(); }
  // The staged-through-host-memory line (gdr_decision.h logDeviceEdge).
  void noteDeviceTrafficStaged(const ConnectContext& ctx, int peer, bool sending) const override;

  // One end of a connection; `device`: how this end places its slots for
  // device-buffer traffic, null for host traffic.
  virtual std::unique_ptr<Connection> connect(ConnectContext& ctx, int peer, uint64_t tag, bool isSender,
                                              const DevicePlacement* device) = 0;

  int factsRow() const { return factsRow_; }

 private:
  int factsRow_ = -1;
  std::string problem_ = "no IB facts published";  // why this rank has no usable port; "" when it has
  GdrDecision gdr_;
  std::unique_ptr<Transport> device_;
};

}  // namespace ib
}  // namespace weft
