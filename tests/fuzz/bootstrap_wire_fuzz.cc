// The bootstrap's messages after the handshake: a rank's hello at the root,
// the root's reply with its address table, a rank's hello at another rank,
// and the frame header before each message (src/bootstrap/wire.h).
// The first byte chooses the message; the rest are its bytes.
#include <cstdio>

#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;
using namespace weft::bootstrap_wire;

namespace {

void rootHello(fuzz::Reader& in) {
  const RootHello h = in.take<RootHello>();
  if (!rootHelloProblem(h).empty()) return;
  // What the root relies on once it accepts a hello: a table index.
  WEFT_FUZZ_CHECK(h.nranks > 0 && h.nranks <= kMaxRanks && h.rank >= 0 && h.rank < h.nranks);
  WEFT_FUZZ_CHECK(!h.listen.str().empty());
}

void rootReply(fuzz::Reader& in) {
  const int nranks = 1 + in.byte() % 64;
  const int rank = in.byte() % nranks;
  const RootReply r = in.take<RootReply>();
  const size_t entries = rootReplyTableEntries(r, nranks);
  WEFT_FUZZ_CHECK(entries == 0 || entries == static_cast<size_t>(nranks));
  std::vector<SocketAddress> table(entries);
  for (auto& a : table) a = in.take<SocketAddress>();
  try {
    checkRootReply(r, rank, nranks, "bootstrap root fuzz");
    WEFT_FUZZ_CHECK(entries == static_cast<size_t>(nranks));
    for (const auto& a : table) (void)a.str();
  } catch (const Error&) {
  }
}

void peerHello(fuzz::Reader& in) {
  const int nranks = 1 + in.byte() % 64;
  const int self = in.byte() % nranks;
  const PeerHello h = in.take<PeerHello>();
  if (!peerHelloProblem(h, self, nranks).empty()) return;
  // The reader indexes its per-rank tables with fromRank.
  WEFT_FUZZ_CHECK(h.fromRank >= 0 && h.fromRank < nranks && h.fromRank != self);
}

void frameHeader(fuzz::Reader& in) {
  const FrameHeader h = in.take<FrameHeader>();
  if (frameHeaderProblem(h).empty()) WEFT_FUZZ_CHECK(h.bytes <= kMaxFrameBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  switch (in.byte() % 4) {
    case 0: rootHello(in); break;
    case 1: rootReply(in); break;
    case 2: peerHello(in); break;
    default: frameHeader(in); break;
  }
  return 0;
}
