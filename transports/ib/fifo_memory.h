// Where one end of an IB connection keeps its FIFO, registered with the HCA.
//
// Host slots (staged): header and slots in one page-aligned host
// allocation, registered whole; what every IB connection used before
// GPUDirect RDMA, and still uses for host buffers.
// GPU slots (GPUDirect RDMA): the header stays in host memory, where the
// proxy thread polls its counters and the device executor reaches it
// through a host mapping; only the slots live in GPU memory, registered by
// dma-buf or through the peer-memory module. FifoEnd::data then points
// into GPU memory while FifoEnd::hdr points into host memory.
#pragma once

#include <cstdint>
#include <memory>

#include "src/exec/cuda/gpu_direct.h"
#include "transports/fifo.h"
#include "transports/ib/ib_device.h"

namespace weft::ib {

class IbFifoMemory {
 public:
  // Host slots. Throws weft::Error.
  IbFifoMemory(std::shared_ptr<IbDevice> dev, uint32_t nSlots, uint64_t slotBytes);
  // GPU slots on cudaDev, registered as `mode` says (DmaBuf or PeerMem).
  // Throws weft::Error, having released whatever it had taken.
  IbFifoMemory(std::shared_ptr<IbDevice> dev, GdrMode mode, int cudaDev, uint32_t nSlots, uint64_t slotBytes);
  ~IbFifoMemory();
  IbFifoMemory(const IbFifoMemory&) = delete;
  IbFifoMemory& operator=(const IbFifoMemory&) = delete;

  FifoHeader* hdr() const { return hdr_; }
  char* data() const { return data_; }       // slot 0
  const MrKeys& slotKeys() const { return mr_; }  // covers every slot
  GdrMode mode() const { return mode_; }     // Staged for host slots

 private:
  void release() noexcept;
  std::shared_ptr<IbDevice> dev_;
  GdrMode mode_ = GdrMode::Staged;
  void* hostMem_ = nullptr;  // host slots: header + slots; GPU slots: the header alone
  cuda::GpuDirectBuffer gpu_;
  FifoHeader* hdr_ = nullptr;
  char* data_ = nullptr;
  MrKeys mr_;
};

}  // namespace weft::ib
