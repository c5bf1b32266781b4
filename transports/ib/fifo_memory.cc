#include "transports/ib/fifo_memory.h"

#include <cstdlib>
#include <cstring>

#include "src/util/error.h"
#include "src/util/log.h"

namespace weft::ib {

namespace {

constexpr size_t kPage = 4096;

void* pageAlloc(size_t bytes) {
  void* p = std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage);
  if (!p) raise(weftSystemError, "NET/IB: out of memory for a %zu-byte FIFO", bytes);
  return p;
}

}  // namespace

IbFifoMemory::IbFifoMemory(std::shared_ptr<IbDevice> dev, uint32_t nSlots, uint64_t slotBytes) : dev_(std::move(dev)) {
  const size_t len = fifoBytes(nSlots, slotBytes);
  hostMem_ = pageAlloc(len);
  try {
    hdr_ = fifoInit(hostMem_, nSlots, slotBytes);
    data_ = static_cast<char*>(hostMem_) + hdr_->dataOffset;
    mr_ = dev_->hostMrs->acquire(hostMem_, len);
  } catch (...) {
    release();
    throw;
  }
}

IbFifoMemory::IbFifoMemory(std::shared_ptr<IbDevice> dev, GdrMode mode, int cudaDev, uint32_t nSlots,
                           uint64_t slotBytes)
    : dev_(std::move(dev)), mode_(mode) {
  if (mode == GdrMode::Staged) raise(weftInternalError, "NET/IB: GPU slots requested in staged mode");
  const size_t slots = size_t(nSlots) * slotBytes;
  const size_t headerLen = fifoBytes(nSlots, slotBytes) - slots;
  hostMem_ = pageAlloc(headerLen);
  try {
    hdr_ = fifoInit(hostMem_, nSlots, slotBytes);
    gpu_ = cuda::GpuDirectBuffer(cudaDev, slots);
    data_ = gpu_.data();
    mr_ = dev_->gpuMrs(mode).acquire(gpu_.data(), gpu_.bytes());
  } catch (...) {
    release();
    throw;
  }
}

IbFifoMemory::~IbFifoMemory() { release(); }

void IbFifoMemory::release() noexcept {
  // The HCA lets go of the memory before it is freed.
  if (mr_.handle) {
    try {
      if (mode_ == GdrMode::Staged) dev_->hostMrs->release(mr_);
      else dev_->gpuMrs(mode_).release(mr_);
    } catch (const std::exception& e) {
      WEFT_WARN("NET/IB: releasing a FIFO registration on %s: %s", dev_->name.c_str(), e.what());
    }
    mr_ = MrKeys{};
  }
  gpu_ = cuda::GpuDirectBuffer();
  std::free(hostMem_);
  hostMem_ = nullptr;
}

}  // namespace weft::ib
