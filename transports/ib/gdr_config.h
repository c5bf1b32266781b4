// The WEFT_* settings of GPUDirect RDMA, read and checked in one place.
#pragma once

#include "transports/ib/gdr_decision.h"

namespace weft::ib {

// Reads WEFT_GDR_DISABLE, WEFT_DMABUF_ENABLE, WEFT_NET_GDR_LEVEL and
// WEFT_GDR_FLUSH_DISABLE. A malformed value throws weftInvalidArgument
// naming the variable.
GdrSettings readGdrSettings();

}  // namespace weft::ib
