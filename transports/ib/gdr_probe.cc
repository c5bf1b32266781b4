#include "transports/ib/gdr_probe.h"

#include <map>
#include <mutex>

#include "src/exec/cuda/gpu_direct.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/ib_device.h"
#include "transports/ib/peer_memory.h"
#include "transports/ib/verbs_loader.h"

namespace weft::ib {

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
  }
  f.verbsDmabuf = v && v->regDmabufMr;
  if (f.verbsDmabuf && f.gpuDmabuf) f.hcaDmabuf = hcaTakesDmabuf(v, ibDev);
  return f;
}

}  // namespace weft::ib
