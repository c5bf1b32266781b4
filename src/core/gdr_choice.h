// This rank's GPUDirect RDMA decision for device-buffer traffic over IB,
// made once at init: its mode goes into PeerInfo, so that both ends of an
// edge agree on whether the edge's device traffic gets IB connections of its
// own (topo::chooseDevicePath), and its reason into the connection logs.
#pragma once

#include "transports/ib/gdr_decision.h"

namespace weft {

// The GPU-NIC distance comes from the host's topology (detected or
// WEFT_TOPO_FILE); when it cannot be had the decision says so. Throws
// weftInvalidArgument for a malformed WEFT_GDR_* / WEFT_DMABUF_ENABLE /
// WEFT_NET_GDR_LEVEL, whether or not this rank could use GPUDirect.
ib::GdrDecision chooseDeviceGdr(int rank, int cudaDev, bool ibUsable);

}  // namespace weft
