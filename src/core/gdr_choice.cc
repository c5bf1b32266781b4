#include "src/core/gdr_choice.h"

#include "src/topology/detect.h"
#include "src/topology/paths.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/gdr_config.h"
#include "transports/ib/ib_transport.h"

namespace weft {

namespace {

std::optional<ib::PciDistance> pciDistance(topo::PathType t) {
  switch (t) {
    case topo::PathType::Loc:
    case topo::PathType::Nvl: return ib::PciDistance::Loc;
    case topo::PathType::Pix: return ib::PciDistance::Pix;
    case topo::PathType::Pxb: return ib::PciDistance::Pxb;
    case topo::PathType::Phb: return ib::PciDistance::Phb;
    case topo::PathType::Sys: return ib::PciDistance::Sys;
    case topo::PathType::Net:
    case topo::PathType::Dis: break;
  }
  return std::nullopt;
}

}  // namespace

ib::GdrDecision chooseDeviceGdr(int rank, int cudaDev, bool ibUsable) {
  (void)ib::readGdrSettings();
  if (!ibUsable) return ib::GdrDecision{ib::GdrMode::Staged, "no usable IB on this rank"};
  if (cudaDev < 0) return ib::GdrDecision{ib::GdrMode::Staged, "no CUDA device on this rank"};
  auto distance = [cudaDev](const std::string& dev, int port) -> std::optional<ib::PciDistance> {
    try {
      topo::LocalTopology local = topo::localTopology();
      auto path = topo::gpuNicPath(*local.system, local.host, cudaDev, dev, port);
      return path ? pciDistance(*path) : std::nullopt;
    } catch (const Error& e) {
      WEFT_INFO(kNet | kGraph, "NET/IB: no topology to measure GPU %d to %s:%d: %s", cudaDev, dev.c_str(), port,
                e.what());
      return std::nullopt;
    }
  };
  ib::GdrDecision d = ibDeviceGdr(rank, cudaDev, distance);
  if (d.mode == ib::GdrMode::Staged)
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d: GPU buffers over IB would be staged through host memory: %s", rank,
              d.reason.c_str());
  else
    WEFT_INFO(kNet | kInit, "NET/IB: rank %d: GPU buffers over IB can use GPU Direct RDMA via %s (%s)", rank,
              ib::gdrModeName(d.mode), d.reason.c_str());
  return d;
}

}  // namespace weft
