// The mutual handshake (src/bootstrap/handshake.h) as either end sees it:
// the fuzz input is everything the other end sends, written into a socket
// pair before the real acceptSide / connectSide / recvSigned read it (then
// EOF, so no execution waits). The fixed-field checks are fuzzed on their
// own too, and StreamMac must accept what it signed and refuse a change.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "src/bootstrap/handshake.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;
using namespace weft::handshake;

namespace {

struct Pair {
  int mine = -1, theirs = -1;
  explicit Pair(const std::vector<uint8_t>& peerBytes) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) abort();
    mine = fds[0];
    theirs = fds[1];
    if (!peerBytes.empty() && write(theirs, peerBytes.data(), peerBytes.size()) != ssize_t(peerBytes.size()))
      abort();
    shutdown(theirs, SHUT_WR);  // EOF after the input; what this end sends still has room
  }
  ~Pair() {
    close(mine);
    close(theirs);
  }
};

Purpose purposeFrom(uint8_t b) { return static_cast<Purpose>(1 + b % 3); }

void acceptor(fuzz::Reader& in, const Secret& secret) {
  const Purpose purpose = purposeFrom(in.byte());
  std::vector<uint8_t> peer = in.bytes(in.left());
  if (peer.size() >= sizeof(Challenge)) {
    Challenge c;
    memcpy(&c, peer.data(), sizeof(c));
    (void)challengeProblem(c, purpose);
  }
  Pair p(peer);
  Session s;
  std::string why;
  const bool ok = acceptSide(p.mine, secret, purpose, Deadline::after(1000), StopFlags{}, &s, &why);
  WEFT_FUZZ_CHECK(!ok || why.empty());
  WEFT_FUZZ_CHECK(ok || !why.empty());
}

void connector(fuzz::Reader& in, const Secret& secret) {
  const Purpose purpose = purposeFrom(in.byte());
  std::vector<uint8_t> peer = in.bytes(in.left());
  if (peer.size() >= sizeof(Response)) {
    Response r;
    memcpy(&r, peer.data(), sizeof(r));
    (void)responseProblem(r);
  }
  Pair p(peer);
  try {
    connectSide(p.mine, secret, purpose, Deadline::after(1000), StopFlags{}, "fuzz peer");
    WEFT_FUZZ_CHECK(!"a connector accepted a response made without the secret");
  } catch (const Error&) {
  }
}

// A signed hello of fuzz-chosen length read back from the stream; with
// `sign` the harness signs it with the right key, so only a mismatch of
// lengths or a tampered byte may fail.
void signedHello(fuzz::Reader& in, bool sign) {
  Digest256 key{};
  const auto k = in.bytes(key.size());
  if (!k.empty()) memcpy(key.data(), k.data(), k.size());
  const size_t helloBytes = 1 + in.byte() % 64;
  const uint8_t flip = in.byte();
  std::vector<uint8_t> peer = in.bytes(in.left());
  if (sign && peer.size() >= helloBytes) {
    StreamMac signer(key);
    peer.resize(helloBytes + kMacBytes);
    signer.sign(peer.data(), helloBytes, nullptr, 0, peer.data() + helloBytes);
    if (flip & 1) peer[(flip >> 1) % peer.size()] ^= 0x20;
  }
  Pair p(peer);
  StreamMac verifier(key);
  std::vector<uint8_t> hello(helloBytes);
  std::string why;
  const bool ok = recvSigned(p.mine, verifier, hello.data(), hello.size(), Deadline::after(1000), StopFlags{}, &why);
  if (sign && peer.size() == helloBytes + kMacBytes) WEFT_FUZZ_CHECK(ok == !(flip & 1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const Secret secret = in.take<Secret>();
  switch (in.byte() % 4) {
    case 0: acceptor(in, secret); break;
    case 1: connector(in, secret); break;
    case 2: signedHello(in, false); break;
    default: signedHello(in, true); break;
  }
  return 0;
}
