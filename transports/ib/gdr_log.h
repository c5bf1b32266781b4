// The log lines that say how one end of a device-buffer edge over IB moves
// its bytes: at INFO for every connection end, and once per process at WARN
// when GPU buffers are staged through host memory (the slow path a user
// should know about).
#pragma once

#include <string>

#include "transports/ib/gdr_decision.h"

namespace weft::ib {

// "NET/IB: rank 0 -> rank 1: GPU Direct RDMA via dma-buf (GPU 0 to mlx5_0:1 PIX, flush by RDMA read)"
// "NET/IB: rank 0 <- rank 1: staged through host memory: <reason>"
// `sending`: this rank is the sender (->), else the receiver (<-).
// `detail` is appended inside the parentheses of the GPUDirect line.
void logDeviceEdge(int rank, int peer, bool sending, const GdrDecision& d, const std::string& detail = "");

}  // namespace weft::ib
