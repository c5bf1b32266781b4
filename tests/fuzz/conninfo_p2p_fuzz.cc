// The p2p transport's offer from the receiving peer (transports/p2p/
// p2p_wire.h), as the sender checks it before opening the IPC handle.
#include <cstdio>

#include "tests/fuzz/fuzz_common.h"
#include "transports/p2p/p2p_wire.h"

using namespace weft;
using namespace weft::p2p_wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const bool sameProcess = in.byte() & 1;
  const int devices = in.byte() % 17;
  const uint64_t bytes = in.take<uint32_t>();
  const uint64_t slotsAt = bytes ? in.take<uint32_t>() % bytes : 0;
  const P2pOfferFields o = in.take<P2pOfferFields>();
  // The same fields as the sender's answer (its credit word), as the
  // receiver checks them before writing the word from its kernel.
  weftResult_t creditCode = weftSuccess;
  if (p2pCreditProblem(o, sameProcess, devices, &creditCode).empty()) {
    WEFT_FUZZ_CHECK(o.device >= 0 && o.device < devices && o.bytes == kP2pCreditBlockBytes);
    WEFT_FUZZ_CHECK(o.dataOffset % kP2pCreditStride == 0 && o.dataOffset + kP2pCreditStride <= o.bytes);
  } else {
    WEFT_FUZZ_CHECK(creditCode != weftSuccess);
  }
  weftResult_t code = weftSuccess;
  if (!p2pOfferProblem(o, bytes, slotsAt, sameProcess, devices, &code).empty()) {
    WEFT_FUZZ_CHECK(code != weftSuccess);
    return 0;
  }
  // The sender then uses the device as an ordinal and writes at slotsAt.
  WEFT_FUZZ_CHECK(o.device >= 0 && o.device < devices);
  WEFT_FUZZ_CHECK(o.dataOffset == slotsAt && o.bytes == bytes);
  return 0;
}
