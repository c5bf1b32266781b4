// The InfiniBand / RoCE transport: RC queue pairs, RDMA write-with-immediate
// of each posted slot into the same slot of the peer's registered FIFO, the
// peer's consumed counter written back as credits. See docs/ib.md.
#pragma once

#include <memory>
#include <string>

#include "transports/transport.h"

namespace weft {

// Always returns a transport. When libibverbs cannot be loaded, no port is
// usable or WEFT_IB_DISABLE is set, its canConnect says why (and the core
// falls back to sockets).
std::unique_ptr<Transport> makeIbTransport();

// Empty when this process can use IB (libibverbs loads and a port passes
// WEFT_IB_DISABLE, WEFT_IB_HCA, state and GID checks); else why not.
std::string ibUnusableReason();

}  // namespace weft
