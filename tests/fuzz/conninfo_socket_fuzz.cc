// The socket transport's messages from a peer (transports/socket/
// socket_wire.h): the receiver's ConnectInfo (read by the sender over the
// bootstrap) and each data socket's hello (read by the receiver after the
// handshake). Also the slot cutting both ends compute from a slot header.
#include <cstdio>

#include "tests/fuzz/fuzz_common.h"
#include "transports/socket/socket_wire.h"

using namespace weft;
using namespace weft::socket_wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  switch (in.byte() % 3) {
    case 0: {
      const ConnectInfo info = in.take<ConnectInfo>();
      if (connectInfoProblem(info).empty()) {
        WEFT_FUZZ_CHECK(info.nSockets >= 1 && info.nSockets <= kMaxSockets);
        // Only a one-socket connection whose socket 0 is shared needs no address.
        WEFT_FUZZ_CHECK(!info.addr.empty() || (info.reverse == 1 && info.nSockets == 1));
        WEFT_FUZZ_CHECK(info.reverse <= 1);
      }
      break;
    }
    case 1: {
      const int peer = in.byte();
      const uint64_t tag = in.take<uint64_t>(), nonce = in.take<uint64_t>();
      const uint32_t nSockets = 1 + in.byte() % kMaxSockets;
      const SocketHello h = in.take<SocketHello>();
      if (socketHelloProblem(h, peer, tag, nonce, nSockets).empty()) WEFT_FUZZ_CHECK(h.index < nSockets);
      break;
    }
    default: {
      // A slot header's size is checked against slotBytes before slotPart.
      const uint64_t slotBytes = 64 + in.take<uint32_t>() % (64u << 20);
      const uint64_t bytes = in.take<uint64_t>() % (slotBytes + 1);
      const uint32_t nSockets = 1 + in.byte() % kMaxSockets;
      uint64_t covered = 0;
      for (uint32_t i = 0; i < nSockets; ++i) {
        uint64_t off = 0, len = 0;
        slotPart(bytes, nSockets, i, &off, &len);
        WEFT_FUZZ_CHECK(off + len <= bytes);
        WEFT_FUZZ_CHECK(len == 0 || off == covered);
        covered += len;
      }
      WEFT_FUZZ_CHECK(covered == bytes);
    }
  }
  return 0;
}
