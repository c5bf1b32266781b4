#include "transports/fifo.h"

#include <new>

#include "src/util/error.h"

namespace weft {

static constexpr uint64_t kPage = 4096;

static uint64_t headerBytes() { return (sizeof(FifoHeader) + kPage - 1) / kPage * kPage; }

size_t fifoBytes(uint32_t nSlots, uint64_t slotBytes) { return headerBytes() + uint64_t(nSlots) * slotBytes; }

FifoHeader* fifoInit(void* mem, uint32_t nSlots, uint64_t slotBytes) {
  if (nSlots == 0 || nSlots > kFifoMaxSlots || slotBytes == 0 || slotBytes % 64)
    raise(weftInvalidArgument, "bad FIFO geometry: %u slots of %lu bytes (1..%u slots, multiple of 64 bytes)", nSlots,
          static_cast<unsigned long>(slotBytes), kFifoMaxSlots);
  auto* h = new (mem) FifoHeader();
  h->magic = kFifoMagic;
  h->nSlots = nSlots;
  h->slotBytes = slotBytes;
  h->dataOffset = headerBytes();
  h->posted.store(0);
  h->consumed.store(0);
  h->failed.store(0);
  return h;
}

}  // namespace weft
