#include "transports/ib/gdr_log.h"

#include <atomic>

#include "src/util/log.h"

namespace weft::ib {

void logDeviceEdge(int rank, int peer, bool sending, const GdrDecision& d, const std::string& detail) {
  const char* arrow = sending ? "->" : "<-";
  if (d.mode != GdrMode::Staged) {
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d %s rank %d: GPU Direct RDMA via %s (%s%s%s)", rank, arrow, peer,
              gdrModeName(d.mode), d.reason.c_str(), detail.empty() ? "" : ", ", detail.c_str());
    return;
  }
  WEFT_INFO(kNet | kInit, "NET/IB: rank %d %s rank %d: staged through host memory: %s", rank, arrow, peer,
            d.reason.c_str());
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    WEFT_WARN("NET/IB: GPU buffers over IB are staged through host memory, not GPU Direct RDMA: %s (first seen on "
              "rank %d %s rank %d; WEFT_DEBUG=INFO names every connection)",
              d.reason.c_str(), rank, arrow, peer);
}

}  // namespace weft::ib
