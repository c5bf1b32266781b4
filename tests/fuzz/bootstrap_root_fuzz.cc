// Stateful harness of the bootstrap root (src/bootstrap/root.cc): a real
// root listens on loopback; the input opens up to four connections, each
// one of: the handshake and a signed hello with fuzz-chosen fields (a rank
// holding the secret but sending what it likes), the handshake and an
// unsigned hello, raw bytes without the handshake, or a connect that closes
// at once. Every rank that sent a signed hello must get a reply with a
// valid MAC or a closed connection (never a hang); when the hellos make a
// complete, consistent job, every rank gets the table of their addresses;
// and the root must end within its bound once the connections are gone.
#include <thread>

#include "src/bootstrap/root.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_net.h"

using namespace weft;
using namespace weft::bootstrap_wire;

namespace {

constexpr int64_t kRootTimeoutMs = 100;

struct Conn {
  fuzz::AuthedConn c;
  bool signedHello = false;
  RootHello hello{};
};

RootHello helloFrom(fuzz::Reader& in, int index) {
  const uint8_t how = in.byte();
  RootHello h{kRootHelloMagic, kVersion, in.byte() % 4, 1 + in.byte() % 4,
              fuzz::loopback(static_cast<uint16_t>(5000 + index))};
  if (how & 1) h.rank = in.take<int32_t>();
  if (how & 2) h.nranks = in.take<int32_t>();
  if (how & 4) h.listen = in.take<SocketAddress>();
  if (how & 8) h.magic ^= in.byte();
  if (how & 16) h.version = in.byte();
  return h;
}

void open(fuzz::Reader& in, const SocketAddress& root, const Secret& secret, int index, Conn* out) {
  const uint8_t mode = in.byte() % 8;
  if (mode >= 6) {  // no handshake: raw bytes (or none), then EOF
    Socket s = connectTo(root, Deadline::after(2000), StopFlags{}, false);
    const auto raw = in.bytes(mode == 6 ? in.byte() : 0);
    fuzz::sendRaw(s.fd(), raw.data(), raw.size());
    return;  // closed here
  }
  out->c = fuzz::connectAuthed(root, secret, handshake::Purpose::kRoot);
  if (mode == 5) {  // a hello without a valid MAC
    const auto raw = in.bytes(sizeof(RootHello) + handshake::kMacBytes);
    fuzz::sendRaw(out->c.sock.fd(), raw.data(), raw.size());
    ::shutdown(out->c.sock.fd(), SHUT_WR);
    return;
  }
  out->hello = helloFrom(in, index);
  handshake::sendSigned(out->c.sock.fd(), out->c.session.toAcceptor, &out->hello, sizeof(out->hello),
                        Deadline::after(2000), StopFlags{}, "fuzz root");
  out->signedHello = true;
}

// Whether the signed hellos make one complete job that the root must accept.
bool completeJob(const std::vector<Conn>& conns) {
  int nranks = -1;
  std::vector<bool> seen;
  for (const Conn& c : conns) {
    if (!c.signedHello) continue;
    if (!rootHelloProblem(c.hello).empty()) return false;
    if (nranks < 0) {
      nranks = c.hello.nranks;
      seen.assign(nranks, false);
    }
    if (c.hello.nranks != nranks || seen[c.hello.rank]) return false;
    seen[c.hello.rank] = true;
  }
  if (nranks < 0) return false;
  for (bool s : seen)
    if (!s) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const Secret secret{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const SocketAddress root = startBootstrapRoot(fuzz::loopback(), secret, kRootTimeoutMs);
  std::vector<Conn> conns(1 + in.byte() % 4);
  try {
    for (size_t i = 0; i < conns.size(); ++i) open(in, root, secret, static_cast<int>(i), &conns[i]);
  } catch (const Error&) {
    // The root may already have timed out and closed its listener.
  }
  const bool complete = completeJob(conns);
  for (Conn& c : conns) {
    if (!c.signedHello) continue;
    fuzz::RootAnswer a;
    const bool answered = fuzz::readRootAnswer(c.c, c.hello.nranks, kRootTimeoutMs + 3000, &a);
    if (complete) {
      // Accepted, or (a machine too loaded to finish within the root's
      // deadline) told it timed out; never refused or left unanswered.
      WEFT_FUZZ_CHECK(answered && (a.reply.status == kRootOk || a.reply.status == kRootTimedOut));
      if (a.reply.status != kRootOk) continue;
      WEFT_FUZZ_CHECK(a.reply.nranks == c.hello.nranks);
      for (const Conn& o : conns)
        if (o.signedHello) WEFT_FUZZ_CHECK(memcmp(&a.table[o.hello.rank], &o.hello.listen, sizeof(SocketAddress)) == 0);
    } else if (answered) {
      WEFT_FUZZ_CHECK(a.reply.magic == kRootReplyMagic);
    }
  }
  conns.clear();
  // The root ends once every connection is answered or gone.
  const Deadline bound = Deadline::after(kRootTimeoutMs + 5000);
  while (bootstrapRootRunningAt(root)) {
    WEFT_FUZZ_CHECK(!bound.passed());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 0;
}
