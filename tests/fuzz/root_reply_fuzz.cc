// A rank's read of the root's answer over a socket (readRootReply in
// src/bootstrap/root.cc): the harness plays a root that holds the session
// key (hostile but authenticated) and writes a reply with fuzz-chosen
// fields, a table of the length the root would send or of any length, a
// valid MAC or fuzz bytes, cut short or whole, into one end of a socket
// pair; the rank reads the other end. A whole, MAC-valid reply that
// checkRootReply accepts must give its table back; a table comes back only
// for such a reply, with one entry per rank and the bytes sent; every
// other reply throws weft::Error (never anything else, never a wait: the
// end of the bytes is an EOF).
#include <sys/socket.h>

#include "src/bootstrap/root.h"
#include "src/bootstrap/wire.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;
using namespace weft::bootstrap_wire;

namespace {

const Digest256 kKey = {1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 21, 42, 7};

bool rootWouldAccept(const RootReply& r, int rank, int nranks) {
  try {
    checkRootReply(r, rank, nranks, "fuzz root");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const int nranks = 1 + in.byte() % 64;
  const int rank = in.byte() % nranks;
  const uint8_t how = in.byte();
  const RootReply r = in.take<RootReply>();
  // bit 0: a table of the length the root would send; else any length.
  const size_t entries = (how & 1) ? rootReplyTableEntries(r, nranks) : in.byte() % 70;
  std::vector<SocketAddress> table(entries);
  for (auto& a : table) a = in.take<SocketAddress>();
  const size_t tableBytes = table.size() * sizeof(SocketAddress);
  uint8_t tag[handshake::kMacBytes];
  handshake::StreamMac sender(kKey);
  if (how & 8) sender.sign(nullptr, 0, nullptr, 0, tag);  // a MAC one message ahead (a replay's sequence)
  if (how & 2) sender.sign(&r, sizeof(r), table.data(), tableBytes, tag);
  else for (auto& b : tag) b = in.byte();
  std::vector<uint8_t> wire(reinterpret_cast<const uint8_t*>(&r), reinterpret_cast<const uint8_t*>(&r + 1));
  wire.insert(wire.end(), reinterpret_cast<const uint8_t*>(table.data()),
              reinterpret_cast<const uint8_t*>(table.data()) + tableBytes);
  wire.insert(wire.end(), tag, tag + sizeof(tag));
  // bit 2: the reply stops early (the root died mid-send); bit 4: extra bytes follow.
  if (how & 4) wire.resize(in.take<uint16_t>() % wire.size());
  if (how & 16) {
    const auto extra = in.bytes(in.byte());
    wire.insert(wire.end(), extra.begin(), extra.end());
  }

  int fds[2];
  WEFT_FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  Socket root(fds[0]), rankEnd(fds[1]);
  // A few KiB at most: the socket's buffer takes it all before the read.
  WEFT_FUZZ_CHECK(trySendAll(root.fd(), wire.data(), wire.size(), Deadline::after(1000), StopFlags{}) == IoStatus::Ok);
  ::shutdown(root.fd(), SHUT_WR);

  const bool whole = !(how & 4);
  const bool macValid = (how & 2) && !(how & 8);
  const bool mustAccept = whole && macValid && entries == rootReplyTableEntries(r, nranks) &&
                          r.magic == kRootReplyMagic && rootWouldAccept(r, rank, nranks);
  handshake::StreamMac receiver(kKey);
  int32_t nonce = 0;
  try {
    const std::vector<SocketAddress> got =
        readRootReply(rankEnd.fd(), receiver, rank, nranks, Deadline::after(5000), 5000, "fuzz root", &nonce);
    // Accepted: an answer the root may give, and exactly the bytes that
    // were on the wire, under a MAC made with the session key.
    WEFT_FUZZ_CHECK(rootWouldAccept(r, rank, nranks));
    WEFT_FUZZ_CHECK(got.size() == static_cast<size_t>(nranks) && nonce == r.jobNonce);
    const size_t gotBytes = got.size() * sizeof(SocketAddress);
    WEFT_FUZZ_CHECK(wire.size() >= sizeof(r) + gotBytes + sizeof(tag));
    WEFT_FUZZ_CHECK(memcmp(got.data(), wire.data() + sizeof(r), gotBytes) == 0);
    uint8_t expect[handshake::kMacBytes];
    handshake::StreamMac(kKey).sign(&r, sizeof(r), got.data(), gotBytes, expect);
    WEFT_FUZZ_CHECK(memcmp(expect, wire.data() + sizeof(r) + gotBytes, sizeof(expect)) == 0);
  } catch (const Error&) {
    WEFT_FUZZ_CHECK(!mustAccept);
  }
  return 0;
}
