// The IB connection info a peer sends over the bootstrap
// (transports/ib/conn_info.h): decodeConnInfo must refuse anything
// malformed with weft::Error, and what it accepts must encode back to the
// same bytes and stay within the limits the connection relies on.
#include <cstdio>

#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"
#include "transports/ib/conn_info.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  // An input one byte longer than the wire form stands for that form with
  // a correct checksum (the CRC sits in its last 4 bytes), so mutations
  // reach the fields behind the checksum.
  if (size == ib::connInfoWireBytes() + 1) {
    bytes.pop_back();
    const uint32_t crc = ib::crc32(bytes.data(), bytes.size() - 4);
    memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  }
  ib::ConnInfo info;
  try {
    info = ib::decodeConnInfo(bytes.data(), bytes.size());
  } catch (const Error&) {
    return 0;
  }
  if (info.usable) {
    WEFT_FUZZ_CHECK(info.nQps >= 1 && info.nQps <= ib::kIbMaxQps);
    WEFT_FUZZ_CHECK(info.psn < (1u << 24));
    WEFT_FUZZ_CHECK(info.mtu >= 1 && info.mtu <= 5);
  }
  WEFT_FUZZ_CHECK(info.role == ib::ConnRole::Sender || info.role == ib::ConnRole::Receiver);
  // The check against the expected peer (what a hostile but authenticated
  // peer meets next): accepted only for the ranks and role it names, with
  // QP numbers a peer can own.
  if (ib::connInfoPeerProblem(info, info.role, info.srcRank, info.dstRank).empty() && info.usable)
    for (uint32_t q = 0; q < info.nQps; ++q) WEFT_FUZZ_CHECK(info.qpn[q] >= 2 && info.qpn[q] <= 0xffffff);
  WEFT_FUZZ_CHECK(!ib::connInfoPeerProblem(info, info.role, info.srcRank ^ 1, info.dstRank).empty());
  const std::vector<uint8_t> again = ib::encodeConnInfo(info);
  WEFT_FUZZ_CHECK(ib::decodeConnInfo(again.data(), again.size()) == info);
  return 0;
}
