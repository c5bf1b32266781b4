// One opened HCA, shared by every connection of the process that uses it:
// one protection domain and the registration caches for host memory and
// for GPU memory (dma-buf or peer memory); and what the HCA and the GPU
// offer GPUDirect RDMA (probeGdr).
#pragma once

#include <infiniband/verbs.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "transports/ib/async_events.h"
#include "transports/ib/gdr_decision.h"
#include "transports/ib/mr_cache.h"
#include "transports/ib/verbs_loader.h"
#include "transports/proxy_service.h"

namespace weft::ib {

struct RankProgress;

struct IbDevice {
  const Verbs* v = nullptr;
  std::string name;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  // Whether the HCA's kernel driver takes dma-buf registrations (probed
  // once at open; false when libibverbs lacks ibv_reg_dmabuf_mr).
  bool dmabufAccepted = false;
  std::unique_ptr<MrCache> hostMrs;     // ibv_reg_mr of host memory
  std::unique_ptr<MrCache> dmabufMrs;   // GPU memory exported as a dma-buf
  std::unique_ptr<MrCache> peerMemMrs;  // GPU memory through the peer-memory module
  // Reads the device's async events; null when libibverbs lacks the calls.
  std::unique_ptr<AsyncEventThread> events;

  IbDevice() = default;
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;
  ~IbDevice();

  // The cache that registers GPU memory the way `mode` says (not Staged).
  MrCache& gpuMrs(GdrMode mode);

  // The completion queue and progress thread that serve every connection
  // of `rank` on this device (shared_cq.h), made with its first connection
  // and freed after its last; a new one replaces a queue that failed.
  // Throws weftSystemError when the queue cannot be created.
  std::shared_ptr<RankProgress> progressFor(int rank);

 private:
  std::mutex proxyMu_;
  std::map<int, std::weak_ptr<RankProgress>> proxies_;
};

// Opens `name` (or returns the process's open instance). Throws
// weftSystemError naming the device when it cannot be opened.
std::shared_ptr<IbDevice> openIbDevice(const Verbs* v, const std::string& name);

// Gathers the facts the GPUDirect RDMA decision (gdr_decision.h) needs for
// one rank: its GPU's support (CUDA driver), libibverbs' dma-buf entry
// point, the HCA driver's answer to a dma-buf registration, and the
// peer-memory module. The GPU-NIC distance comes from the caller (the
// topology). Never throws for "not there": that is a fact like any other.
struct Verbs;

// With the process's libibverbs (loadVerbs).
GdrFacts probeGdr(const std::string& ibDev, int port, int cudaDev, std::optional<PciDistance> distance);
// With a given verbs table (null: libibverbs could not be loaded).
GdrFacts probeGdr(const Verbs* verbs, const std::string& ibDev, int port, int cudaDev,
                  std::optional<PciDistance> distance);

}  // namespace weft::ib
