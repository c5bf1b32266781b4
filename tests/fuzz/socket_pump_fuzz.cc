// Stateful harness of the socket transport's receiving side
// (transports/socket/socket_recv.cc): a real SocketConnection accepts 1-4
// loopback sockets from the harness (handshake and signed hellos, as the
// sending rank does), then the input drives what arrives: well-formed slots
// cut into parts as the real sender cuts them, raw bytes, slot headers with
// chosen fields, orderly close markers, abrupt closes. A consumer thread
// plays the executor (moving bytes itself or not, WEFT_SOCKET_INLINE).
// When everything was well formed every slot must arrive intact and in
// order; whatever came, the connection must be destroyed within bounds.
// The proxy service and the consumer thread live for the whole run: each
// input attaches its own connection and FIFO to them.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "src/util/doorbell.h"
#include "transports/proxy_service.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_net.h"
#include "transports/socket/socket_connection.h"

using namespace weft;
using namespace weft::socket_wire;

namespace {

constexpr uint64_t kTag = 77;
constexpr uint64_t kNonce = 0x1234;

// The executor's side: one thread for the whole run, handed each input's
// FIFO end in turn (starting and joining a thread per input cost more than
// most inputs), idle on a condition variable between inputs.
class Consumer {
 public:
  Consumer() : thread_([this] { loop(); }) {}
  ~Consumer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // Starts taking slots from `end` (no input under way).
  void begin(const FifoEnd& end) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_.clear();
    end_ = end;
    stop_.store(false);
    active_ = true;
    cv_.notify_all();
  }
  // Stops taking slots; returns once the thread no longer touches the end.
  void finish() {
    stop_.store(true);
    if (Doorbell* bell = end_.consumerBell) ring(bell);  // it may sleep on it
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !active_; });
  }
  // Whether n slots arrived, waiting up to ms for them.
  bool waitForSlots(size_t n, int64_t ms) {
    std::unique_lock<std::mutex> lock(slotsMu_);
    return slotsCv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return slots_.size() >= n; });
  }
  // After finish().
  const std::vector<std::vector<uint8_t>>& slots() const { return slots_; }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return active_ || quit_; });
      if (quit_) return;
      FifoEnd end = end_;
      lock.unlock();
      take(end);
      lock.lock();
      active_ = false;
      cv_.notify_all();
    }
  }
  // Waits as the host executor does (a few polls, then yields, then sleeps
  // on the FIFO's bell): a consumer that polled back to back took half the
  // run's CPU from the proxy and the harness it waits for.
  void take(FifoEnd& end) {
    Backoff wait(rankWaitKnobs(/*busy=*/false));
    for (;;) {
      // The bell's count before the stop flag: finish() sets the flag, then rings.
      const uint32_t seen = end.consumerBell ? end.consumerBell->seq.load(std::memory_order_acquire) : 0;
      if (stop_.load()) return;
      uint64_t bytes = 0;
      if (const void* p = end.tryPeek(&bytes)) {
        const auto* b = static_cast<const uint8_t*>(p);
        {
          std::lock_guard<std::mutex> lock(slotsMu_);
          slots_.emplace_back(b, b + bytes);
        }
        slotsCv_.notify_all();
        end.release();
        wait.reset();
        continue;
      }
      if (end.failed()) return;
      if (end.progress && end.progress->tryProgress(1024)) {
        wait.reset();
        continue;
      }
      const WaitPhase phase = wait.idle();
      if (phase == WaitPhase::Sleep && !end.consumerBell) std::this_thread::yield();
      else wait.pause(phase, end.consumerBell, seen);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  FifoEnd end_;
  bool active_ = false;  // under mu_: an input's end is being taken from
  bool quit_ = false;
  std::atomic<bool> stop_{false};
  std::mutex slotsMu_;
  std::condition_variable slotsCv_;
  std::vector<std::vector<uint8_t>> slots_;
  std::thread thread_;  // last: it runs on the members above
};

// The real sender's cut of one slot: header and part on every socket with
// a part, socket 0 alone for an empty slot; a short part on socket 0 travels
// padded to kHeadPayload bytes (wireBytes), as the sender pads it.
void sendSlot(std::vector<fuzz::AuthedConn>& socks, uint32_t seq, const std::vector<uint8_t>& slot,
              uint64_t slotBytes) {
  const uint32_t n = static_cast<uint32_t>(socks.size());
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t off = 0, len = 0;
    slotPart(slot.size(), n, i, &off, &len);
    if (len == 0 && !(i == 0 && slot.empty())) continue;
    SlotHeader h{slot.size(), seq, 0};
    fuzz::sendRaw(socks[i].sock.fd(), &h, sizeof(h));
    fuzz::sendRaw(socks[i].sock.fd(), slot.data() + off, len);
    const std::vector<uint8_t> padding(wireBytes(i, len, slotBytes) - len, 0);
    if (!padding.empty()) fuzz::sendRaw(socks[i].sock.fd(), padding.data(), padding.size());
  }
}

struct Setup {
  FifoGeometry geometry;
  uint32_t nSockets;
  bool inlineMode;
};

std::unique_ptr<SocketConnection> makeReceiver(const Setup& s, Doorbell* bell, const std::atomic<bool>* abortFlag,
                                               std::atomic<int>* errors, SocketAddress* at) {
  SocketConnection::Params p;
  p.side = SocketConnection::Side::Recv;
  p.rank = 0;
  p.peer = 1;
  p.tag = kTag;
  p.ifName = "lo";
  p.peerName = "fuzz sender";
  p.geometry = s.geometry;
  p.localBell = bell;
  p.abortFlag = abortFlag;
  p.onAsyncError = [errors](weftResult_t, const std::string&) { errors->fetch_add(1); };
  p.nSockets = s.nSockets;
  p.secret = Secret{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
  p.nonce = kNonce;
  p.acceptTimeoutMs = 5000;  // the harness connects at once; only a loaded machine is slow
  // One proxy thread serves every input's connection in turn, as one
  // serves all of a rank's connections in a transport.
  static const auto service = std::make_shared<ProxyService>("weft-sock-fuzz", kProxySleepSliceNs, /*spin=*/false,
                                                             /*logRank=*/0);
  p.service = service;
  setenv("WEFT_SOCKET_INLINE", s.inlineMode ? "1" : "0", 1);
  Socket listener = listenOn(fuzz::loopback(), at, 64);
  return std::make_unique<SocketConnection>(std::move(p), std::vector<Socket>{}, std::move(listener));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  Setup s;
  s.geometry.nSlots = 1 + in.byte() % 8;
  s.geometry.slotBytes = 64 * (1 + in.byte() % 32);
  s.nSockets = 1 + in.byte() % 4;
  s.inlineMode = in.byte() & 1;
  Doorbell bell;
  std::atomic<bool> abortFlag{false};
  std::atomic<int> errors{0};
  SocketAddress at;
  auto conn = makeReceiver(s, &bell, &abortFlag, &errors, &at);
  static Consumer consumer;
  consumer.begin(conn->fifo());

  std::vector<fuzz::AuthedConn> socks;
  const Secret secret{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
  for (uint32_t i = 0; i < s.nSockets; ++i) {
    socks.push_back(fuzz::connectAuthed(at, secret, handshake::Purpose::kSocketData));
    SocketHello h{kHelloMagic, kVersion, 1, i, kTag, kNonce};
    handshake::sendSigned(socks.back().sock.fd(), socks.back().session.toAcceptor, &h, sizeof(h),
                          Deadline::after(2000), StopFlags{}, "fuzz receiver");
  }
  bool wellFormed = true;
  uint32_t seq = 0;
  std::vector<std::vector<uint8_t>> sent;
  for (int n = 0; n < 32 && in.left() > 0; ++n) {
    const uint8_t kind = in.byte();
    fuzz::AuthedConn& c = socks[(kind >> 3) % socks.size()];
    switch (kind % 8) {
      case 0: case 1: case 2: case 3: {
        std::vector<uint8_t> slot = in.bytes(in.take<uint16_t>() % (s.geometry.slotBytes + 1));
        sendSlot(socks, seq++, slot, s.geometry.slotBytes);
        sent.push_back(std::move(slot));
        break;
      }
      case 4: {
        const auto raw = in.bytes(in.byte());
        fuzz::sendRaw(c.sock.fd(), raw.data(), raw.size());
        wellFormed = false;
        break;
      }
      case 5: {
        const SlotHeader h = in.take<SlotHeader>();
        fuzz::sendRaw(c.sock.fd(), &h, sizeof(h));
        wellFormed = false;
        break;
      }
      case 6: {
        const SlotHeader h{kCloseMarker, 0, 0};
        fuzz::sendRaw(c.sock.fd(), &h, sizeof(h));
        wellFormed = false;
        break;
      }
      default:
        ::shutdown(c.sock.fd(), SHUT_WR);
        wellFormed = false;
    }
  }
  if (wellFormed) {
    // Generous: on a loaded machine each hand-off of a 1-slot FIFO between
    // proxy and consumer can take tens of milliseconds.
    const Deadline bound = Deadline::after(20000);
    while (!consumer.waitForSlots(sent.size(), 1)) {
      WEFT_FUZZ_CHECK(errors.load() == 0);
      WEFT_FUZZ_CHECK(!bound.passed());
    }
  }
  consumer.finish();
  if (wellFormed) WEFT_FUZZ_CHECK(consumer.slots() == sent);
  for (auto& c : socks) fuzz::closeWithReset(c.sock);
  conn.reset();  // bounded: the proxy leaves on its halt flag
  return 0;
}
