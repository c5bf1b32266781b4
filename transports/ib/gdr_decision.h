// Whether one rank's device-buffer traffic over IB uses GPUDirect RDMA (the
// HCA reads and writes FIFO slots in GPU memory) or is staged through host
// slots, and why; the settings that steer it and the log lines that report
// it per connection. The decision is pure: the facts are gathered elsewhere
// (probeGdr, ib_device.h), so every combination is testable on a machine
// without a GPU or an HCA.
//
// The decision is per rank, not per pair: a sender with GPU slots and a
// receiver with host slots (or the reverse) work together, because the wire
// protocol only names an address and a key.
#pragma once

#include <optional>
#include <string>

namespace weft::ib {

enum class GdrMode {
  Staged = 0,   // slots in host memory, mapped for the GPU (no GPUDirect)
  DmaBuf = 1,   // GPU slots exported as a dma-buf, ibv_reg_dmabuf_mr
  PeerMem = 2,  // GPU slots registered with plain ibv_reg_mr (nvidia-peermem)
};

// "staged", "dma-buf", "peer memory"
const char* gdrModeName(GdrMode m);

// How far apart the GPU and the NIC are on the PCI tree, closest first
// (the topology's path types without NVLink and the network).
enum class PciDistance { Loc = 0, Pix, Pxb, Phb, Sys };

const char* pciDistanceName(PciDistance d);  // "LOC", "PIX", ...
// Parses a WEFT_NET_GDR_LEVEL value (LOC, PIX, PXB, PHB, SYS, any case);
// anything else throws weftInvalidArgument naming the variable.
PciDistance parseGdrLevel(const std::string& text);

// The WEFT_* settings that steer the decision (readGdrSettings reads them).
struct GdrSettings {
  bool disabled = false;                  // WEFT_GDR_DISABLE
  bool dmabufEnabled = true;              // WEFT_DMABUF_ENABLE
  PciDistance maxDistance = PciDistance::Pxb;  // WEFT_NET_GDR_LEVEL
  bool levelSet = false;                  // WEFT_NET_GDR_LEVEL was given
  bool flushDisabled = false;             // WEFT_GDR_FLUSH_DISABLE
};

// What the machine offers, for one rank's GPU and the IB port it uses.
struct GdrFacts {
  int cudaDev = -1;         // the rank's GPU; -1: none
  std::string gpuProblem;   // non-empty: the GPU could not be asked (no driver, ...)
  bool gpuDmabuf = false;   // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  bool gpuRdma = false;     // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
  std::string nic;          // "mlx5_0:1", for messages
  bool verbsDmabuf = false; // libibverbs exports ibv_reg_dmabuf_mr
  bool hcaDmabuf = false;   // the HCA's kernel driver accepts dma-buf registrations
  std::string peerMemModule;  // the loaded peer-memory module ("nvidia-peermem"), "" if none
  std::optional<PciDistance> distance;  // GPU to NIC; nullopt: the topology cannot tell
  int ccMajor = -1, ccMinor = -1;        // the GPU's compute capability; -1: unknown
};

struct GdrDecision {
  GdrMode mode = GdrMode::Staged;
  std::string reason;  // why staged; or where GPUDirect is done ("GPU 0 to mlx5_0:1 PIX",
                       // "nvidia-peermem, GPU 0 to mlx5_0:1 PIX")
  bool flush = true;        // a receiver with GPU slots flushes (decideFlush, flush_schedule.h)
  std::string flushReason;  // why (not), for the connection's log line

  static GdrDecision staged(std::string why) {
    GdrDecision d;
    d.reason = std::move(why);
    return d;
  }
};

// Checks, in order (the first that fails is the reason): WEFT_GDR_DISABLE;
// a GPU for the rank; the GPU answers; the GPU-NIC distance is known (or
// WEFT_NET_GDR_LEVEL is set, which trusts an unknown one) and within
// WEFT_NET_GDR_LEVEL; then dma-buf when enabled and supported by the
// GPU, libibverbs and the HCA driver, else peer memory when its module is
// loaded and the GPU supports GPUDirect RDMA, else staged with what each
// of the two lacks.
GdrDecision decideGdr(const GdrSettings& s, const GdrFacts& f);

// The WEFT_* settings of GPUDirect RDMA, read and checked in one place.
// Reads WEFT_GDR_DISABLE, WEFT_DMABUF_ENABLE, WEFT_NET_GDR_LEVEL and
// WEFT_GDR_FLUSH_DISABLE. A malformed value throws weftInvalidArgument
// naming the variable.
GdrSettings readGdrSettings();

// The log lines that say how one end of a device-buffer edge over IB moves
// its bytes: at INFO for every connection end, and once per process at WARN
// when GPU buffers are staged through host memory (the slow path a user
// should know about).
// "NET/IB: rank 0 -> rank 1: GPU Direct RDMA via dma-buf (GPU 0 to mlx5_0:1 PIX, flush by RDMA read)"
// "NET/IB: rank 0 <- rank 1: staged through host memory: <reason>"
// `sending`: this rank is the sender (->), else the receiver (<-).
// `detail` is appended inside the parentheses of the GPUDirect line.
void logDeviceEdge(int rank, int peer, bool sending, const GdrDecision& d, const std::string& detail = "");

}  // namespace weft::ib
