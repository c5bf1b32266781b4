// Stateful harness of a rank's bootstrap reader (src/bootstrap/bootstrap.cc):
// rank 0 joins the harness's root on loopback (HarnessRoot: the real root is
// bootstrap_root's subject); the harness plays the other ranks (2 or 3 in
// all), connects to rank 0 as them and sends
// what the input says: signed frames with chosen tags and payloads (the
// bootstrap's own tags among them), a frame header that claims much and
// stops, raw bytes, a second connection for a rank already connected, an
// abrupt close. When every frame was well formed, rank 0 must receive each
// exactly as sent; whatever came, its bootstrap must be destroyed within
// bounds. Queries (while everything so far was well formed) must be
// answered: rank 0 connects back to the asking rank's listener, which the
// harness serves, and sends the number and its handler's answer, signed.
#include <mutex>
#include <thread>

#include "src/bootstrap/bootstrap.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_net.h"

using namespace weft;
using namespace weft::bootstrap_wire;

namespace {

constexpr int64_t kJoinMs = 3000;

struct Sent {
  int from;
  uint64_t tag;
  std::vector<uint8_t> payload;
};

// The harness's side: ranks 1.. at the root, then connections to rank 0.
struct Harness {
  Secret secret{7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int nranks = 2;
  Socket listener;  // where the harness's ranks listen (rank 0 connects to answer a query)
  SocketAddress listenAt;
  std::vector<SocketAddress> table;
  Secret peerKey{};  // what ranks prove to each other (derivePeerKey), once joined
  std::vector<fuzz::AuthedConn> toRank0;  // per harness rank, once opened
  // Second connections for a rank, open (as a duplicate process would
  // hold them) until the input ends.
  std::vector<fuzz::AuthedConn> twins;
  std::vector<bool> broken;                // that connection saw a bad op
  // Rank 0's connections to the harness's ranks, opened to answer their
  // queries (accepted on `listener`, one query at a time).
  struct FromRank0 {
    Socket sock;
    handshake::StreamMac mac;
  };
  std::vector<FromRank0> fromRank0;
  std::vector<Sent> sent;
  bool allWellFormed = true;
};

// A tag byte from 250 on asks a query (queryFrom) instead of a frame.
constexpr uint8_t kQueryByte = 250;

uint64_t tagFrom(fuzz::Reader& in, uint8_t t) {
  static const uint64_t kTags[] = {1, 2, 42, kAllGatherTag, kBarrierTag, kGoodbyeTag, kQueryReplyTag};
  if (t < 200) return kTags[t % std::size(kTags)];
  const uint64_t raw = in.take<uint64_t>();
  return raw == kQueryTag ? 3 : raw;
}
uint64_t tagFrom(fuzz::Reader& in) { return tagFrom(in, in.byte()); }

// What rank 0's query handler answers (the harness checks it came back).
std::vector<char> answerTo(int peer, const std::vector<char>& request) {
  std::vector<char> out(request.rbegin(), request.rend());
  out.push_back(static_cast<char>(peer));
  return out;
}

// Rank 0's answer to the harness rank's query `id`: on rank 0's connection
// to that rank's listener (accepted, authenticated and greeted the first
// time), a signed reply frame holding the number and the handler's answer.
void awaitAnswer(Harness& h, int rank, uint64_t id, const std::vector<char>& request) {
  const Deadline d = Deadline::after(kJoinMs);
  Harness::FromRank0& a = h.fromRank0[rank];
  std::string why;
  while (!a.sock.valid()) {
    // As a rank's inbox does, a connection that fails the handshake is
    // dropped and the next one taken, within the bound: another process
    // of this machine (the bootstrap_root fuzzer, run at the same time)
    // may reach this listener on a reused loopback port. Rank 0's own
    // connection must still authenticate before the deadline.
    SocketAddress from;
    Socket s = acceptFrom(h.listener, d, StopFlags{}, &from);
    if (!s.valid()) fprintf(stderr, "no authenticated answer from rank 0 (last refusal: %s)\n", why.c_str());
    WEFT_FUZZ_CHECK(s.valid());
    handshake::Session session;
    if (!handshake::acceptSide(s.fd(), h.peerKey, handshake::Purpose::kPeer, d, StopFlags{}, &session, &why)) {
      fprintf(stderr, "fuzz: dropped a connection from %s: %s\n", from.str().c_str(), why.c_str());
      continue;
    }
    PeerHello hello{};
    WEFT_FUZZ_CHECK(handshake::recvSigned(s.fd(), session.toAcceptor, &hello, sizeof(hello), d, StopFlags{}, &why));
    WEFT_FUZZ_CHECK(peerHelloProblem(hello, rank, h.nranks).empty() && hello.fromRank == 0);
    a.mac = session.toAcceptor;
    a.sock = std::move(s);
  }
  FrameHeader fh{};
  WEFT_FUZZ_CHECK(tryRecvAll(a.sock.fd(), &fh, sizeof(fh), d, StopFlags{}) == IoStatus::Ok);
  WEFT_FUZZ_CHECK(frameHeaderProblem(fh).empty() && fh.tag == kQueryReplyTag);
  std::vector<char> payload(fh.bytes);
  WEFT_FUZZ_CHECK(tryRecvAll(a.sock.fd(), payload.data(), payload.size(), d, StopFlags{}) == IoStatus::Ok);
  WEFT_FUZZ_CHECK(a.mac.verify(&fh, kFrameSignedBytes, payload.data(), payload.size(), fh.mac));
  std::vector<char> expect(sizeof(id));
  memcpy(expect.data(), &id, sizeof(id));
  const std::vector<char> body = answerTo(rank, request);
  expect.insert(expect.end(), body.begin(), body.end());
  WEFT_FUZZ_CHECK(payload == expect);
}

// A query to rank 0 (its number, then the request), asked only while every
// frame so far was well formed: rank 0 must then answer, and the harness
// waits for it (an answer nobody accepts would hold rank 0's teardown for
// the answer's bound).
void queryFrom(Harness& h, int rank, fuzz::Reader& in) {
  const uint64_t id = in.take<uint64_t>();
  const std::vector<uint8_t> raw = in.bytes(in.byte());
  if (!h.allWellFormed || h.broken[rank]) return;
  const std::vector<char> request(raw.begin(), raw.end());
  std::vector<uint8_t> payload(sizeof(id));
  memcpy(payload.data(), &id, sizeof(id));
  payload.insert(payload.end(), raw.begin(), raw.end());
  FrameHeader fh{kQueryTag, payload.size(), {}};
  fuzz::AuthedConn& c = h.toRank0[rank];
  c.session.toAcceptor.sign(&fh, kFrameSignedBytes, payload.data(), payload.size(), fh.mac);
  fuzz::sendRaw(c.sock.fd(), &fh, sizeof(fh));
  fuzz::sendRaw(c.sock.fd(), payload.data(), payload.size());
  awaitAnswer(h, rank, id, request);
}

void connectAs(Harness& h, int rank, fuzz::Reader& in) {
  h.toRank0[rank] = fuzz::connectAuthed(h.table[0], h.peerKey, handshake::Purpose::kPeer);
  PeerHello hello{kPeerHelloMagic, kVersion, rank, h.nranks};
  const uint8_t how = in.byte();
  if (how == 0xff) hello.fromRank = in.take<int32_t>();
  if (how == 0xfe) hello.nranks = in.take<int32_t>();
  if (how >= 0xfe) h.allWellFormed = false;
  handshake::sendSigned(h.toRank0[rank].sock.fd(), h.toRank0[rank].session.toAcceptor, &hello, sizeof(hello),
                        Deadline::after(2000), StopFlags{}, "fuzz rank 0");
}

void signedFrame(Harness& h, int rank, fuzz::Reader& in) {
  const uint8_t t = in.byte();
  if (t >= kQueryByte) return queryFrom(h, rank, in);
  const uint64_t tag = tagFrom(in, t);
  const std::vector<uint8_t> payload = in.bytes(in.byte());
  FrameHeader fh{tag, payload.size(), {}};
  fuzz::AuthedConn& c = h.toRank0[rank];
  c.session.toAcceptor.sign(&fh, kFrameSignedBytes, payload.data(), payload.size(), fh.mac);
  fuzz::sendRaw(c.sock.fd(), &fh, sizeof(fh));
  fuzz::sendRaw(c.sock.fd(), payload.data(), payload.size());
  if (tag == kGoodbyeTag) h.broken[rank] = true;  // nothing after it is read
  else if (!h.broken[rank] && tag < kFirstReservedTag) h.sent.push_back(Sent{rank, tag, payload});
}

void op(Harness& h, fuzz::Reader& in) {
  const int rank = 1 + in.byte() % (h.nranks - 1);
  const uint8_t kind = in.byte() % 8;
  if (!h.toRank0[rank].sock.valid()) connectAs(h, rank, in);
  fuzz::AuthedConn& c = h.toRank0[rank];
  if (kind < 4) return signedFrame(h, rank, in);
  // Anything else may cost frames already sent (a reader that stops, or a
  // race between two connections of one rank): only bounds are checked.
  h.allWellFormed = false;
  if (kind != 7) h.broken[rank] = true;
  switch (kind) {
    case 4: {  // a header that claims a large frame, then the connection ends
      FrameHeader fh{tagFrom(in), in.take<uint64_t>(), {}};
      c.session.toAcceptor.sign(&fh, kFrameSignedBytes, nullptr, 0, fh.mac);
      fuzz::sendRaw(c.sock.fd(), &fh, sizeof(fh));
      ::shutdown(c.sock.fd(), SHUT_WR);
      break;
    }
    case 5: {
      const auto raw = in.bytes(in.byte());
      fuzz::sendRaw(c.sock.fd(), raw.data(), raw.size());
      ::shutdown(c.sock.fd(), SHUT_WR);
      break;
    }
    case 6: ::shutdown(c.sock.fd(), SHUT_WR); break;
    default: {  // a second connection for the same rank: one of the two is refused
      fuzz::AuthedConn& twin = h.twins.emplace_back(
          fuzz::connectAuthed(h.table[0], h.peerKey, handshake::Purpose::kPeer));
      PeerHello hello{kPeerHelloMagic, kVersion, rank, h.nranks};
      handshake::sendSigned(twin.sock.fd(), twin.session.toAcceptor, &hello, sizeof(hello), Deadline::after(2000),
                            StopFlags{}, "fuzz rank 0");
    }
  }
}

// The root rank 0 joins: one harness thread for the whole run, answering
// each input's rank 0 with a signed table (rank 0's listener, then the
// harness's for the other ranks), as the real root does once every rank
// joined. A real root per input started a thread for itself and one per
// rank, most of this harness's thread starts, and the harness's ranks had
// to say hello to it too; bootstrap_root fuzzes the real one.
class HarnessRoot {
 public:
  explicit HarnessRoot(const Secret& secret) : secret_(secret) {
    listener_ = listenOn(fuzz::loopback(), &at_);
    std::thread([this] { serve(); }).detach();  // blocked in accept when the process exits
  }
  const SocketAddress& address() const { return at_; }

  // The next join: nranks ranks, the others listening at `others`.
  void expect(int nranks, const SocketAddress& others, int32_t jobNonce) {
    std::lock_guard<std::mutex> lock(mu_);
    nranks_ = nranks;
    others_ = others;
    jobNonce_ = jobNonce;
  }
  // The table the last join got (rank 0 has its answer once join returns);
  // taken, so that nothing an input allocated outlives it.
  std::vector<SocketAddress> takeTable() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<SocketAddress> out;
    out.swap(table_);
    return out;
  }

 private:
  void serve() {
    for (;;) {
      SocketAddress from;
      Socket s = acceptFrom(listener_, Deadline::after(3600 * 1000), StopFlags{}, &from);
      if (s.valid()) answer(s);
    }
  }
  void answer(Socket& s) {
    const Deadline d = Deadline::after(kJoinMs);
    handshake::Session session;
    std::string why;
    RootHello hello{};
    // A stranger on a reused loopback port is dropped, as the real root
    // drops it; rank 0's join fails its bound if its own connection is.
    if (!handshake::acceptSide(s.fd(), secret_, handshake::Purpose::kRoot, d, StopFlags{}, &session, &why)) {
      fprintf(stderr, "fuzz root: dropped a connection: %s\n", why.c_str());
      return;
    }
    WEFT_FUZZ_CHECK(handshake::recvSigned(s.fd(), session.toAcceptor, &hello, sizeof(hello), d, StopFlags{}, &why));
    std::unique_lock<std::mutex> lock(mu_);
    WEFT_FUZZ_CHECK(rootHelloProblem(hello).empty() && hello.rank == 0 && hello.nranks == nranks_);
    std::vector<SocketAddress> table(nranks_, others_);
    table[0] = hello.listen;
    RootReply r{kRootReplyMagic, kRootOk, nranks_, jobNonce_};
    table_ = table;
    lock.unlock();
    uint8_t tag[handshake::kMacBytes];
    session.toConnector.sign(&r, sizeof(r), table.data(), table.size() * sizeof(SocketAddress), tag);
    WEFT_FUZZ_CHECK(trySendAll(s.fd(), &r, sizeof(r), d, StopFlags{}) == IoStatus::Ok);
    WEFT_FUZZ_CHECK(trySendAll(s.fd(), table.data(), table.size() * sizeof(SocketAddress), d, StopFlags{}) ==
                    IoStatus::Ok);
    WEFT_FUZZ_CHECK(trySendAll(s.fd(), tag, sizeof(tag), d, StopFlags{}) == IoStatus::Ok);
    // Rank 0 closes first once it read the reply; the reset then ends its
    // TIME_WAIT (every input's connection goes to this one port).
    char byte;
    (void)tryRecvAll(s.fd(), &byte, 1, d, StopFlags{});
    fuzz::closeWithReset(s);
  }

  Secret secret_;
  Socket listener_;
  SocketAddress at_;
  std::mutex mu_;
  int nranks_ = 0;
  SocketAddress others_;
  int32_t jobNonce_ = 0;
  std::vector<SocketAddress> table_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  Harness h;
  static HarnessRoot* const root = new HarnessRoot(h.secret);  // before the thread count: it lives on
  static int32_t jobNonce = 0;
  const size_t threadsBefore = fuzz::threadCount();
  h.nranks = 2 + in.byte() % 2;
  h.toRank0.resize(h.nranks);
  h.broken.assign(h.nranks, false);
  h.fromRank0.resize(h.nranks);
  h.listener = listenOn(fuzz::loopback(), &h.listenAt);
  weftUniqueId id{};
  UniqueIdLayout l{kIdMagic, kVersion, 0, root->address(), {}};
  memcpy(l.secret, h.secret.data(), sizeof(l.secret));
  memcpy(id.internal, &l, sizeof(l));
  root->expect(h.nranks, h.listenAt, ++jobNonce);
  std::unique_ptr<Bootstrap> rank0 = Bootstrap::join(id, 0, h.nranks, kJoinMs);
  rank0->setQueryHandler(answerTo);
  h.table = root->takeTable();
  WEFT_FUZZ_CHECK(static_cast<int>(h.table.size()) == h.nranks);
  h.peerKey = derivePeerKey(h.secret, jobNonce, h.table);
  for (int n = 0; n < 16 && in.left() > 0; ++n) op(h, in);
  if (h.allWellFormed) {
    for (const Sent& s : h.sent) {
      std::vector<uint8_t> got(s.payload.size());
      rank0->recv(s.from, s.tag, got.data(), got.size());
      WEFT_FUZZ_CHECK(got == s.payload);
    }
  }
  for (auto& c : h.toRank0) fuzz::closeWithReset(c.sock);
  for (auto& c : h.twins) fuzz::closeWithReset(c.sock);
  for (auto& c : h.fromRank0) fuzz::closeWithReset(c.sock);
  h.toRank0.clear();
  h.twins.clear();
  rank0.reset();
  h.fromRank0.clear();  // bounded: readers are woken and joined
  WEFT_FUZZ_CHECK(fuzz::threadsBackTo(threadsBefore, 5000));
  return 0;
}
