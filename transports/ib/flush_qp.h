// A queue pair connected to itself, through which the receiving proxy reads
// a few bytes of its own GPU slots: when such a read completes, every
// earlier write of the HCA into that GPU memory is visible to the GPU (see
// flush_schedule.h). One per receiving connection end with GPU slots.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "transports/ib/ib_config.h"
#include "transports/ib/ib_device.h"

namespace weft::ib {

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

 private:
  const Verbs* v_;
  ibv_qp* qp_ = nullptr;
  std::string where_;
};

}  // namespace weft::ib
