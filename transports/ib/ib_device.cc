#include "transports/ib/ib_device.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "src/exec/cuda/gpu_direct.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/peer_memory.h"
#include "transports/ib/shared_cq.h"
#include "transports/ib/verbs_loader.h"

namespace weft::ib {

namespace {

// Host slots are written by the peer; GPU slots also serve the receiver's
// own flush read (FlushQp, fifo_memory.h), hence remote read.
constexpr int kHostAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
constexpr int kGpuAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// An invalid file descriptor makes a driver that knows dma-buf fail with
// EBADF; one that does not (kernel before 5.12, provider without it)
// answers EOPNOTSUPP or EPROTONOSUPPORT before looking at the descriptor.
bool probeDmabuf(const Verbs* v, ibv_pd* pd) {
  if (!v->regDmabufMr) return false;
  errno = 0;
  ibv_mr* mr = v->regDmabufMr(pd, 0, 0, 0, -1, 0);
  if (mr) {
    v->deregMr(mr);
    return true;
  }
  return errno != EOPNOTSUPP && errno != EPROTONOSUPPORT;
}

MrKeys keysOf(ibv_mr* mr) { return MrKeys{mr, mr->lkey, mr->rkey}; }

}  // namespace

IbDevice::~IbDevice() {
  events.reset();
  hostMrs.reset();
  dmabufMrs.reset();
  peerMemMrs.reset();
  if (pd) v->deallocPd(pd);
  if (ctx) v->closeDevice(ctx);
}

MrCache& IbDevice::gpuMrs(GdrMode mode) {
  if (mode == GdrMode::DmaBuf) return *dmabufMrs;
  if (mode == GdrMode::PeerMem) return *peerMemMrs;
  raise(weftInternalError, "NET/IB: no GPU registration for mode %s", gdrModeName(mode));
}

std::shared_ptr<RankProgress> IbDevice::progressFor(int rank) {
  std::lock_guard<std::mutex> lock(proxyMu_);
  if (auto live = proxies_[rank].lock(); live && !live->cq->broken()) return live;
  auto made = std::make_shared<RankProgress>(*this, rank);
  proxies_[rank] = made;
  return made;
}

std::shared_ptr<IbDevice> openIbDevice(const Verbs* v, const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<IbDevice>> open;
  std::lock_guard<std::mutex> lock(mu);
  if (auto d = open[name].lock()) return d;
  int n = 0;
  ibv_device** list = v->getDeviceList(&n);
  if (!list) raise(weftSystemError, "NET/IB: ibv_get_device_list failed while opening %s", name.c_str());
  auto dev = std::make_shared<IbDevice>();
  dev->v = v;
  dev->name = name;
  for (int i = 0; i < n && !dev->ctx; ++i)
    if (name == v->getDeviceName(list[i])) dev->ctx = v->openDevice(list[i]);
  v->freeDeviceList(list);
  if (!dev->ctx) raise(weftSystemError, "NET/IB: cannot open device %s", name.c_str());
  dev->pd = v->allocPd(dev->ctx);
  if (!dev->pd) raise(weftSystemError, "NET/IB: ibv_alloc_pd on %s failed", name.c_str());
  dev->dmabufAccepted = probeDmabuf(v, dev->pd);
  if (v->getAsyncEvent && v->ackAsyncEvent) dev->events = std::make_unique<AsyncEventThread>(v, dev->ctx, name);
  ibv_pd* pd = dev->pd;
  std::string devName = name;
  auto dereg = [v](const MrKeys& k) { v->deregMr(static_cast<ibv_mr*>(k.handle)); };
  dev->hostMrs = std::make_unique<MrCache>(
      [v, pd, devName](uintptr_t base, size_t bytes) {
        ibv_mr* mr = v->regMr(pd, reinterpret_cast<void*>(base), bytes, kHostAccess);
        if (!mr)
          raise(weftSystemError, "NET/IB: ibv_reg_mr of %zu bytes on %s failed: %s (is `ulimit -l` unlimited?)",
                bytes, devName.c_str(), std::strerror(errno));
        return keysOf(mr);
      },
      dereg);
  dev->dmabufMrs = std::make_unique<MrCache>(
      [v, pd, devName](uintptr_t base, size_t bytes) {
        if (!v->regDmabufMr)
          raise(weftSystemError, "NET/IB: %s: libibverbs has no ibv_reg_dmabuf_mr", devName.c_str());
        int fd = cuda::exportDmaBuf(reinterpret_cast<const void*>(base), bytes);
        // The MR keeps its own reference to the dma-buf; the descriptor is
        // not needed once the registration returned.
        ibv_mr* mr = v->regDmabufMr(pd, 0, bytes, base, fd, kGpuAccess);
        int err = errno;
        close(fd);
        if (!mr)
          raise(weftSystemError, "NET/IB: ibv_reg_dmabuf_mr of %zu bytes of GPU memory on %s failed: %s", bytes,
                devName.c_str(), std::strerror(err));
        return keysOf(mr);
      },
      dereg);
  dev->peerMemMrs = std::make_unique<MrCache>(
      [v, pd, devName](uintptr_t base, size_t bytes) {
        cuda::syncMemops(reinterpret_cast<const void*>(base));
        ibv_mr* mr = v->regMr(pd, reinterpret_cast<void*>(base), bytes, kGpuAccess);
        if (!mr)
          raise(weftSystemError,
                "NET/IB: ibv_reg_mr of %zu bytes of GPU memory on %s failed: %s (is the nvidia-peermem module "
                "loaded?)",
                bytes, devName.c_str(), std::strerror(errno));
        return keysOf(mr);
      },
      dereg);
  WEFT_INFO(kNet, "NET/IB: opened %s%s", name.c_str(),
            v->regDmabufMr ? (dev->dmabufAccepted ? " (dma-buf registration accepted)"
                                                  : " (its kernel driver refuses dma-buf registration)")
                           : "");
  open[name] = dev;
  return dev;
}

namespace {

// Opening a device to ask costs a few milliseconds; the answer cannot
// change while the process runs.
bool hcaTakesDmabuf(const Verbs* v, const std::string& dev) {
  static std::mutex mu;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(dev);
  if (it != known.end()) return it->second;
  bool ok = false;
  try {
    ok = openIbDevice(v, dev)->dmabufAccepted;
  } catch (const Error& e) {
    WEFT_INFO(kNet, "NET/IB: cannot ask %s about dma-buf: %s", dev.c_str(), e.what());
  }
  return known[dev] = ok;
}

}  // namespace

GdrFacts probeGdr(const std::string& ibDev, int port, int cudaDev, std::optional<PciDistance> distance) {
  return probeGdr(loadVerbs(nullptr), ibDev, port, cudaDev, distance);
}

GdrFacts probeGdr(const Verbs* v, const std::string& ibDev, int port, int cudaDev,
                  std::optional<PciDistance> distance) {
  GdrFacts f;
  f.cudaDev = cudaDev;
  f.nic = ibDev + ":" + std::to_string(port);
  f.distance = distance;
  f.peerMemModule = findPeerMemoryModule();
  if (cudaDev >= 0) {
    cuda::GpuDirectSupport g = cuda::gpuDirectSupport(cudaDev);
    f.gpuProblem = g.problem;
    f.gpuDmabuf = g.dmabuf;
    f.gpuRdma = g.rdma;
    f.ccMajor = g.ccMajor;
    f.ccMinor = g.ccMinor;
  }
  f.verbsDmabuf = v && v->regDmabufMr;
  if (f.verbsDmabuf && f.gpuDmabuf) f.hcaDmabuf = hcaTakesDmabuf(v, ibDev);
  return f;
}

}  // namespace weft::ib
