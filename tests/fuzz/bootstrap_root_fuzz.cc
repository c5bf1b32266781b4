// Stateful harness of the bootstrap root (src/bootstrap/root.cc): a real
// root listens on loopback; the input opens up to four connections, each
// one of: the handshake and a signed hello with fuzz-chosen fields (a rank
// holding the secret but sending what it likes), the handshake and an
// unsigned hello, raw bytes without the handshake, or a connect that closes
// at once. Every rank that sent a signed hello must get a reply with a
// valid MAC or a closed connection (never a hang); when the hellos make a
// complete, consistent job, every rank gets the table of their addresses;
// and the root must end within its bound once the connections are gone.
// When the job cannot complete, the harness ends the root's wait for ranks
// itself once its on-time connections are open (endBootstrapRootWait), the
// input's late connections then meet the root's late grace, and the harness
// ends that too: each input takes the time of its connections, not of the
// root's deadlines.
#include <thread>

#include "src/bootstrap/root.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_net.h"

using namespace weft;
using namespace weft::bootstrap_wire;

namespace {

// The root's own deadlines only back the harness up: a complete job ends
// when its last rank joins, an incomplete one when the harness ends the
// root's waits. Long, so that on a loaded machine they never end an input
// before the harness does.
constexpr int64_t kRootTimeoutMs = 3000;
constexpr int64_t kLateGraceMs = 3000;

// One connection as the input describes it (read before any is opened).
struct Plan {
  uint8_t mode = 0;            // 0-4 signed hello, 5 unsigned hello, 6 raw bytes, 7 nothing
  std::vector<uint8_t> raw;    // modes 5 and 6
  RootHello hello{};           // modes 0-4
  bool signedHello() const { return mode < 5; }
};

struct Conn {
  fuzz::AuthedConn c;
  bool signedHello = false;
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

Plan planFrom(fuzz::Reader& in, int index) {
  Plan p;
  p.mode = in.byte() % 8;
  if (p.mode >= 6) p.raw = in.bytes(p.mode == 6 ? in.byte() : 0);
  else if (p.mode == 5) p.raw = in.bytes(sizeof(RootHello) + handshake::kMacBytes);
  else p.hello = helloFrom(in, index);
  return p;
}

void open(const Plan& p, const SocketAddress& root, const Secret& secret, Conn* out) {
  if (p.mode >= 6) {  // no handshake: raw bytes (or none), then EOF
    Socket s = fuzz::connectOnce(root);
    if (!s.valid()) raise(weftRemoteError, "fuzz harness: connect to the root refused");
    fuzz::sendRaw(s.fd(), p.raw.data(), p.raw.size());
    return;  // closed here
  }
  out->c = fuzz::connectAuthed(root, secret, handshake::Purpose::kRoot);
  if (p.mode == 5) {  // a hello without a valid MAC
    fuzz::sendRaw(out->c.sock.fd(), p.raw.data(), p.raw.size());
    ::shutdown(out->c.sock.fd(), SHUT_WR);
    return;
  }
  handshake::sendSigned(out->c.sock.fd(), out->c.session.toAcceptor, &p.hello, sizeof(p.hello),
                        Deadline::after(2000), StopFlags{}, "fuzz root");
  out->signedHello = true;
}

// Whether the signed hellos make one complete job that the root must accept.
bool completeJob(const std::vector<Plan>& plans) {
  int nranks = -1;
  std::vector<bool> seen;
  for (const Plan& p : plans) {
    if (!p.signedHello()) continue;
    if (!rootHelloProblem(p.hello).empty()) return false;
    if (nranks < 0) {
      nranks = p.hello.nranks;
      seen.assign(nranks, false);
    }
    if (p.hello.nranks != nranks || seen[p.hello.rank]) return false;
    seen[p.hello.rank] = true;
  }
  if (nranks < 0) return false;
  for (bool s : seen)
    if (!s) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const size_t threadsBefore = fuzz::threadCount();
  const Secret secret{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::vector<Plan> plans(1 + in.byte() % 4);
  for (size_t i = 0; i < plans.size(); ++i) plans[i] = planFrom(in, static_cast<int>(i));
  const bool complete = completeJob(plans);
  // Connections from lateFrom on open after the wait for ranks ended (none
  // when the input says nothing, nor for a complete job: it ends itself).
  const size_t lateFrom = complete ? plans.size() : plans.size() - in.byte() % (plans.size() + 1);
  const SocketAddress root = startBootstrapRoot(fuzz::loopback(), secret, kRootTimeoutMs, kLateGraceMs);
  std::vector<Conn> conns(plans.size());
  try {
    for (size_t i = 0; i < plans.size(); ++i) {
      if (i == lateFrom) endBootstrapRootWait(root);
      open(plans[i], root, secret, &conns[i]);
    }
  } catch (const Error&) {
    // The root may already have ended and closed its listener.
  }
  if (!complete && lateFrom == plans.size()) endBootstrapRootWait(root);
  for (size_t i = 0; i < conns.size(); ++i) {
    Conn& c = conns[i];
    if (!c.signedHello) continue;
    const RootHello& hello = plans[i].hello;
    fuzz::RootAnswer a;
    const bool answered = fuzz::readRootAnswer(c.c, hello.nranks, kRootTimeoutMs + 3000, &a);
    if (complete) {
      // Accepted, or (a machine too loaded to finish within the root's
      // deadline) told it timed out; never refused or left unanswered.
      WEFT_FUZZ_CHECK(answered && (a.reply.status == kRootOk || a.reply.status == kRootTimedOut));
      if (a.reply.status != kRootOk) continue;
      WEFT_FUZZ_CHECK(a.reply.nranks == hello.nranks);
      for (const Plan& o : plans)
        if (o.signedHello())
          WEFT_FUZZ_CHECK(memcmp(&a.table[o.hello.rank], &o.hello.listen, sizeof(SocketAddress)) == 0);
    } else if (answered) {
      WEFT_FUZZ_CHECK(a.reply.magic == kRootReplyMagic);
    }
  }
  for (Conn& c : conns) fuzz::closeWithReset(c.c.sock);
  conns.clear();
  if (!complete) endBootstrapRootWait(root);  // the late grace
  // The root ends once every connection is answered or gone.
  const Deadline bound = Deadline::after(kRootTimeoutMs + kLateGraceMs + 5000);
  while (bootstrapRootRunningAt(root)) {
    WEFT_FUZZ_CHECK(!bound.passed());
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  WEFT_FUZZ_CHECK(fuzz::threadsBackTo(threadsBefore, 5000));
  return 0;
}
