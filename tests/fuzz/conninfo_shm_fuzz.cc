// The shared-memory transport's offer from the receiving peer
// (transports/shm/shm_wire.h), as the sender checks it before mapping.
#include <cstdio>

#include "tests/fuzz/fuzz_common.h"
#include "transports/shm/shm_wire.h"

using namespace weft;
using namespace weft::shm_wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const bool sameProcess = in.byte() & 1;
  const uint64_t bytes = in.take<uint32_t>();
  const ShmOffer o = in.take<ShmOffer>();
  if (!shmOfferProblem(o, bytes, sameProcess).empty()) return 0;
  WEFT_FUZZ_CHECK(o.bytes == bytes);
  // The sender opens the named segment: the name must end inside its field.
  if (!sameProcess) WEFT_FUZZ_CHECK(strnlen(o.name, sizeof(o.name)) < sizeof(o.name) && o.name[0]);
  return 0;
}
