#include "transports/ib/gdr_decision.h"

#include <strings.h>

#include <atomic>

#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft::ib {

const char* gdrModeName(GdrMode m) {
  switch (m) {
    case GdrMode::Staged: return "staged";
    case GdrMode::DmaBuf: return "dma-buf";
    case GdrMode::PeerMem: return "peer memory";
  }
  return "?";
}

namespace {

constexpr const char* kDistanceNames[] = {"LOC", "PIX", "PXB", "PHB", "SYS"};

std::string gpuName(const GdrFacts& f) { return "GPU " + std::to_string(f.cudaDev); }

// Why dma-buf cannot be used; empty when it can.
std::string dmabufProblem(const GdrSettings& s, const GdrFacts& f) {
  if (!s.dmabufEnabled) return "disabled by WEFT_DMABUF_ENABLE=0";
  if (!f.gpuDmabuf) return gpuName(f) + " does not support dma-buf (CUDA driver, or kernel older than 5.12)";
  if (!f.verbsDmabuf) return "libibverbs lacks ibv_reg_dmabuf_mr (rdma-core older than v34)";
  if (!f.hcaDmabuf) return "the kernel driver of " + f.nic + " refuses dma-buf registrations";
  return "";
}

// Why peer memory cannot be used; empty when it can.
std::string peerMemProblem(const GdrFacts& f) {
  if (f.peerMemModule.empty()) return "no nvidia-peermem (or nv_peer_mem) kernel module loaded";
  if (!f.gpuRdma) return gpuName(f) + " does not support GPU Direct RDMA";
  return "";
}

}  // namespace

const char* pciDistanceName(PciDistance d) {
  int i = static_cast<int>(d);
  return i >= 0 && i < 5 ? kDistanceNames[i] : "?";
}

PciDistance parseGdrLevel(const std::string& text) {
  for (int i = 0; i < 5; ++i)
    if (!strcasecmp(text.c_str(), kDistanceNames[i])) return static_cast<PciDistance>(i);
  raise(weftInvalidArgument, "WEFT_NET_GDR_LEVEL=%s: use LOC, PIX, PXB, PHB or SYS (the farthest GPU-NIC path "
        "that may use GPU Direct RDMA)", text.c_str());
}

GdrDecision decideGdr(const GdrSettings& s, const GdrFacts& f) {
  GdrDecision d;
  if (s.disabled) {
    d.reason = "GPU Direct RDMA disabled by WEFT_GDR_DISABLE";
    return d;
  }
  if (f.cudaDev < 0) {
    d.reason = "no CUDA device on this rank";
    return d;
  }
  if (!f.gpuProblem.empty()) {
    d.reason = "cannot query " + gpuName(f) + ": " + f.gpuProblem;
    return d;
  }
  std::string where = gpuName(f) + " to " + f.nic + " ";
  if (!f.distance) {
    if (!s.levelSet) {
      d.reason = "the topology does not tell how far " + gpuName(f) + " is from " + f.nic +
                 " (set WEFT_NET_GDR_LEVEL to use GPU Direct RDMA anyway)";
      return d;
    }
    where += "distance unknown";
  } else {
    if (*f.distance > s.maxDistance) {
      d.reason = gpuName(f) + " and " + f.nic + " are " + pciDistanceName(*f.distance) +
                 " apart, farther than WEFT_NET_GDR_LEVEL=" + pciDistanceName(s.maxDistance);
      return d;
    }
    where += pciDistanceName(*f.distance);
  }
  const std::string noDmabuf = dmabufProblem(s, f);
  if (noDmabuf.empty()) {
    d.mode = GdrMode::DmaBuf;
    d.reason = where;
    return d;
  }
  const std::string noPeerMem = peerMemProblem(f);
  if (noPeerMem.empty()) {
    d.mode = GdrMode::PeerMem;
    d.reason = f.peerMemModule + ", " + where;
    return d;
  }
  d.reason = "no dma-buf (" + noDmabuf + ") and no peer memory (" + noPeerMem + ")";
  return d;
}

GdrSettings readGdrSettings() {
  GdrSettings s;
  s.disabled = settings::get(settings::kGdrDisable);
  s.dmabufEnabled = settings::get(settings::kDmabufEnable);
  s.flushDisabled = settings::get(settings::kGdrFlushDisable);
  if (auto level = settings::get(settings::kNetGdrLevel)) {
    s.maxDistance = parseGdrLevel(*level);
    s.levelSet = true;
  }
  return s;
}

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
