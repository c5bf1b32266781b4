#include "transports/ib/peer_memory.h"

#include <unistd.h>

namespace weft::ib {

std::string findPeerMemoryModule(const std::string& sysRoot) {
  // A loaded module shows up under /sys/module; the peer-memory client it
  // registers with the RDMA core (MLNX_OFED kernels) under memory_peers.
  struct Probe {
    const char* path;
    const char* module;
  };
  static constexpr Probe kProbes[] = {
      {"/module/nvidia_peermem", "nvidia-peermem"},
      {"/kernel/mm/memory_peers/nvidia-peermem/version", "nvidia-peermem"},
      {"/module/nv_peer_mem", "nv_peer_mem"},
      {"/kernel/mm/memory_peers/nv_mem/version", "nv_peer_mem"},
      {"/kernel/mm/memory_peers/nv_mem_nc/version", "nv_peer_mem"},
  };
  for (const Probe& p : kProbes)
    if (access((sysRoot + p.path).c_str(), F_OK) == 0) return p.module;
  return "";
}

}  // namespace weft::ib
