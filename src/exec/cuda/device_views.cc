// The device views of the FIFOs a plan names, and the image DeviceState
// uploads (device_image.h builds its steps, channels and FIFO table).
// Mapping a FIFO is set-up (cudaHostRegister, a header read-back): done at
// init for the ring, or by the first call of a shape outside capture, never
// inside one.
#include <cstring>
#include <map>
#include <tuple>

#include "src/exec/cuda/device_image.h"
#include "src/exec/cuda/device_state.h"
#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"

namespace weft::cuda {
namespace {

size_t alignUp(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

// Slots apart from their header: in this GPU's memory (ib with GPUDirect
// RDMA: the HCA moves them, only the header is host memory, for the proxy)
// or host memory of their own, mapped.
char* DeviceState::slotsView(char* data, size_t bytes) {
  const int slotDevice = deviceOf(data);
  if (slotDevice < 0) {
    mappings_.emplace_back(data, bytes);
    return static_cast<char*>(mappings_.back().device(data));
  }
  if (slotDevice != device_)
    raise(weftInvalidUsage,
          "device executor: a FIFO's slots are on GPU %d but this communicator's device work runs on GPU %d "
          "(the rank's CUDA device at init must be the device of its buffers)",
          slotDevice, device_);
  return data;
}

// The geometry of a FIFO in GPU memory (p2p) is read back once, on the
// setup stream: a plain cudaMemcpy would queue on the legacy stream and wait
// for kernels of peers that wait for this rank.
DevFifo DeviceState::fifoView(const FifoEnd& e, bool captured) {
  auto it = fifoViews_.find(e.hdr);
  if (it != fifoViews_.end()) return it->second;
  if (captured) refuseInCapture({.fifosMapped = false});
  countDeviceSetup();
  FifoHeader h;
  char* hdrDev;
  char* dataDev;
  if (deviceOf(e.hdr) >= 0) {
    WEFT_CUDA_CHECK(cudaMemcpyAsync(&h, e.hdr, sizeof(h), cudaMemcpyDefault, stream_->setup()));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_->setup()));
    hdrDev = reinterpret_cast<char*>(e.hdr);
    dataDev = e.data;
  } else {
    memcpy(static_cast<void*>(&h), e.hdr, sizeof(h));
    // Host-memory FIFOs may have a host mover (proxy) sleeping on these.
    ringer_.add(e.consumerBell);
    ringer_.add(e.producerBell);
    const size_t slots = size_t(h.nSlots) * h.slotBytes;
    const char* hdrHost = reinterpret_cast<const char*>(e.hdr);
    if (e.data == hdrHost + h.dataOffset) {
      mappings_.emplace_back(hdrHost, h.dataOffset + slots);
      hdrDev = static_cast<char*>(mappings_.back().device(hdrHost));
      dataDev = static_cast<char*>(mappings_.back().device(e.data));
    } else {
      mappings_.emplace_back(hdrHost, sizeof(FifoHeader));
      hdrDev = static_cast<char*>(mappings_.back().device(hdrHost));
      dataDev = slotsView(e.data, slots);
    }
  }
  if (h.magic != kFifoMagic || h.nSlots == 0 || h.nSlots > kFifoMaxSlots)
    raise(weftInternalError, "device executor: FIFO at %p is not initialised", static_cast<void*>(e.hdr));
  auto* hd = reinterpret_cast<FifoHeader*>(hdrDev);
  DevFifo f{};
  f.posted = reinterpret_cast<uint32_t*>(&hd->posted);
  f.consumed = reinterpret_cast<uint32_t*>(&hd->consumed);
  f.failed = reinterpret_cast<uint32_t*>(&hd->failed);
  f.sizes = hd->sizes;
  f.data = dataDev;
  f.slotBytes = h.slotBytes;
  f.nSlots = h.nSlots;
  f.credit = e.credit;  // GPU FIFOs: the producer's credit word (null: it reads consumed)
  fifoViews_[e.hdr] = f;
  return f;
}

DeviceState::HostImage DeviceState::buildImage(const plan::Plan& p, const FifoLookup& fifos, bool captured) {
  DeviceImage d = buildDeviceImage(p, [&](bool send, int peer, int conn) {
    return fifoView(send ? fifos.send(peer, conn) : fifos.recv(peer, conn), captured);
  });
  HostImage img;
  img.channels = std::move(d.channels);
  img.steps = std::move(d.steps);
  img.fifos = std::move(d.fifos);
  img.stepsAt = alignUp(img.channels.size() * sizeof(DevChannel));
  img.fifosAt = img.stepsAt + alignUp(img.steps.size() * sizeof(DevStep));
  img.bytes.assign(img.fifosAt + img.fifos.size() * sizeof(DevFifo), 0);
  memcpy(img.bytes.data(), img.channels.data(), img.channels.size() * sizeof(DevChannel));
  memcpy(img.bytes.data() + img.stepsAt, img.steps.data(), img.steps.size() * sizeof(DevStep));
  memcpy(img.bytes.data() + img.fifosAt, img.fifos.data(), img.fifos.size() * sizeof(DevFifo));
  return img;
}

void DeviceState::prepare(const plan::Plan& p, const FifoLookup& fifos) {
  DeviceGuard guard(device_);
  (void)buildImage(p, fifos, false);
}

}  // namespace weft::cuda
