// Where one end of an IB connection keeps its FIFO, registered with the HCA.
//
// Host slots (staged): header and slots in one page-aligned host
// allocation, registered whole; what every IB connection used before
// GPUDirect RDMA, and still uses for host buffers.
// GPU slots (GPUDirect RDMA): the header stays in host memory, where the
// proxy thread polls its counters and the device executor reaches it
// through a host mapping; only the slots live in GPU memory, registered by
// dma-buf or through the peer-memory module. FifoEnd::data then points
// into GPU memory while FifoEnd::hdr points into host memory; the
// receiving end then makes the HCA's writes visible to the GPU through a
// flush queue pair (FlushQp) before it posts a slot.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "src/exec/cuda/gpu_direct.h"
#include "transports/fifo.h"
#include "transports/ib/ib_select.h"
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

// A queue pair connected to itself, through which the receiving proxy reads
// a few bytes of its own GPU slots: when such a read completes, every
// earlier write of the HCA into that GPU memory is visible to the GPU (see
// flush_schedule.h). One per receiving connection end with GPU slots.
// wr_id of a flush read's completion (slots use their index, credit writes ~0).
constexpr uint64_t kFlushWrId = ~uint64_t(1);

// The local port's address, as the data QPs use it.
struct LoopbackAddress {
  uint8_t port = 1;
  bool roce = false;
  uint16_t lid = 0;
  ibv_gid gid{};
  int gidIndex = 0;
  ibv_mtu mtu = IBV_MTU_1024;
};

class FlushQp {
 public:
  // Creates the QP on `cq` and brings it to RTS aimed at itself. Throws
  // weftSystemError naming `where` (device, port, peer) on failure.
  FlushQp(const IbDevice& dev, ibv_cq* cq, const LoopbackAddress& addr, const IbConfig& cfg, const std::string& where);
  ~FlushQp();
  FlushQp(const FlushQp&) = delete;
  FlushQp& operator=(const FlushQp&) = delete;

  // Posts a signalled read of kReadBytes at (remoteAddr, rkey) into the
  // registered host word (landingAddr, lkey); it completes with kFlushWrId.
  void postRead(uint64_t remoteAddr, uint32_t rkey, uint64_t landingAddr, uint32_t lkey);

  static constexpr uint32_t kReadBytes = 4;
  uint32_t qpNum() const { return qp_->qp_num; }

 private:
  const Verbs* v_;
  ibv_qp* qp_ = nullptr;
  std::string where_;
};

}  // namespace weft::ib
