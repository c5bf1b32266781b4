// One direction of an IB connection: RC queue pairs, a registered slot
// FIFO, a credit word, and the proxy thread that moves slots.
//
// Sender: the executor fills slots of a local registered staging FIFO; the
// proxy RDMA-writes-with-immediate each posted slot into the same slot of
// the receiver's FIFO (immediate = slot index + size) once the credit word
// says the receiver freed it, and frees the local slot when the write has
// completed. Receiver: the proxy turns each immediate into a post of its
// local FIFO, and writes the executor's `consumed` counter back into the
// sender's credit word as slots are released.
//
// A connection that carries device-buffer traffic may keep its slots in GPU
// memory (GPUDirect RDMA, fifo_memory.h): the HCA then reads the sender's
// slots and writes the receiver's straight from and into the GPU, and the
// receiving proxy makes those writes visible to the GPU (FlushQp in fifo_memory.h,
// flush_schedule.h) before it posts a slot.
#pragma once

#include <memory>
#include <string>

#include "transports/ib/ib_select.h"
#include "transports/ib/ib_transport.h"
#include "transports/transport.h"

namespace weft::ib {

struct IbPortChoice {
  PortState port;
  int gidIndex = 0;
  GidType gidType = GidType::Unknown;
};

// `device`: null for host-buffer traffic (host slots, as always). When GPU
// slots cannot be allocated or registered, the connection says why (WARN)
// and uses host slots instead.
std::unique_ptr<Connection> connectIb(ConnectContext& ctx, int peer, uint64_t tag, bool isSender,
                                      const IbPortChoice& choice, const IbConfig& cfg,
                                      const DevicePlacement* device = nullptr);

}  // namespace weft::ib
