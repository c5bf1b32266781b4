// Finds the kernel module that lets an HCA register GPU memory with plain
// ibv_reg_mr (the "peer memory" path of GPUDirect RDMA): nvidia-peermem
// (shipped with the NVIDIA driver) or the older nv_peer_mem. Neither is
// needed for dma-buf registration.
#pragma once

#include <string>

namespace weft::ib {

// The module's name when one is loaded, else "". sysRoot is "/sys" except
// in tests, which point it at a fake tree.
std::string findPeerMemoryModule(const std::string& sysRoot = "/sys");

}  // namespace weft::ib
