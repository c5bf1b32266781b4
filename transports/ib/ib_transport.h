// The InfiniBand / RoCE transport: RC queue pairs, RDMA write-with-immediate
// of each posted slot into the same slot of the peer's registered FIFO, the
// peer's consumed counter written back as credits. See docs/ib.md.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "transports/ib/gdr_decision.h"
#include "transports/transport.h"

namespace weft {

// Always returns a transport. When libibverbs cannot be loaded, no port is
// usable or WEFT_IB_DISABLE is set, its canConnect says why (and the core
// falls back to sockets).
std::unique_ptr<Transport> makeIbTransport();

// The IB transport for device-buffer traffic: each connection end keeps its
// slots in GPU memory (GPUDirect RDMA) when `local`, this rank's decision,
// says so and the registration works, else in host memory. The core uses it
// for device edges over IB where at least one end can do GPUDirect RDMA.
// Reads WEFT_GDR_FLUSH_DISABLE.
std::unique_ptr<Transport> makeIbDeviceTransport(const ib::GdrDecision& local, int cudaDev);

// GPU-NIC distance for an IB port ("mlx5_0", 1) of this host, or nullopt
// when the topology cannot tell.
using NicDistanceFn = std::function<std::optional<ib::PciDistance>(const std::string& dev, int port)>;

// How this rank's device-buffer traffic over IB would move: the port its
// connections use, what the GPU, libibverbs, the HCA and the kernel offer,
// the distance `distance` reports for that port, and the WEFT_GDR_* /
// WEFT_DMABUF_ENABLE / WEFT_NET_GDR_LEVEL settings. A malformed setting
// throws weftInvalidArgument; a missing capability is a Staged reason.
ib::GdrDecision ibDeviceGdr(int rank, int cudaDev, const NicDistanceFn& distance);

// Empty when this process can use IB (libibverbs loads and a port passes
// WEFT_IB_DISABLE, WEFT_IB_HCA, state and GID checks); else why not.
std::string ibUnusableReason();

}  // namespace weft
