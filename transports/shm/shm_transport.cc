// Shared-memory transport: ranks on one host.
//
// The receiver owns the FIFO (so its slots sit in memory the receiver reads
// often) and tells the sender where it is: a token of local_handles when both
// ranks are threads of one process, a POSIX shm segment name otherwise. The sender
// writes or reduces straight into the receiver's slots: zero copies beyond the
// reduction itself. Each side rings the other's executor doorbell, which for
// another process was mapped at init from the segment named in its PeerInfo.
#include <cstdlib>
#include <memory>
#include <cstring>
#include <optional>

#include "src/util/error.h"
#include "src/util/local_handles.h"
#include "src/util/log.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_transport.h"
#include "transports/shm/shm_wire.h"
#include "transports/transport.h"
#include "src/util/settings.h"

namespace weft {
namespace {

using namespace shm_wire;

class ShmConnection : public Connection {
 public:
  FifoEnd end;
  std::optional<ShmSegment> fifoSegment;  // other-process FIFO mapping
  // Same-process FIFO: heap memory that both ends own, so neither end's
  // destroy frees it under the other.
  std::shared_ptr<void> heap;
  bool sameProcess = false;

  FifoEnd fifo() const override { return end; }
  std::string describe() const override { return sameProcess ? "SHM/process" : "SHM"; }
};

bool sameProcess(const ConnectContext& ctx, int peer) {
  return ctx.peer(peer).processHash == ctx.self().processHash && ctx.peer(peer).pid == ctx.self().pid;
}

Doorbell* peerDoorbell(const ConnectContext& ctx, int peer) {
  Doorbell* bell = ctx.peerBells ? (*ctx.peerBells)[peer] : nullptr;
  if (!bell) raise(weftInternalError, "shm: the doorbell of rank %d is not mapped", peer);
  return bell;
}

}  // namespace

bool shmCanJoin(bool disabled, bool sameHost, topo::PeerTopoKind kind, std::string* why) {
  if (disabled) {
    *why = "WEFT_SHM_DISABLE=1";
    return false;
  }
  if (!sameHost) {
    *why = "hosts differ";
    return false;
  }
  *why = "same host";
  // There is no GPU peer-to-peer transport for host buffers; say so where
  // the topology would have allowed one.
  if (kind == topo::PeerTopoKind::P2p) *why += " (GPUs P2P-capable; host buffers go through shared memory)";
  return true;
}

namespace {

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "SHM"; }

  bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const override {
    return shmCanJoin(settings::get(settings::kShmDisable), ctx.peer(peer).hostHash == ctx.self().hostHash,
                      ctx.topoKind(peer), why);
  }

  std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) override {
    auto c = std::make_unique<ShmConnection>();
    c->sameProcess = sameProcess(ctx, peer);
    const size_t bytes = fifoBytes(ctx.geometry.nSlots, ctx.geometry.slotBytes);
    ShmOffer offer;
    offer.sameProcess = c->sameProcess;
    offer.bytes = bytes;
    void* mem;
    if (c->sameProcess) {
      mem = aligned_alloc(4096, bytes);
      if (!mem) raise(weftSystemError, "shm: cannot allocate a %zu-byte FIFO", bytes);
      c->heap = std::shared_ptr<void>(mem, free);
      prefault(mem, bytes);
      offer.token = local_handles::publish(c->heap);
    } else {
      c->fifoSegment = ShmSegment::create("weft-fifo", bytes);
      mem = c->fifoSegment->data();
      snprintf(offer.name, sizeof(offer.name), "%s", c->fifoSegment->name().c_str());
    }
    FifoHeader* hdr = fifoInit(mem, ctx.geometry.nSlots, ctx.geometry.slotBytes);
    c->end.attach(hdr, static_cast<char*>(mem) + hdr->dataOffset, ctx.geometry);
    c->end.consumerBell = ctx.localBell;
    c->end.producerBell = peerDoorbell(ctx, peer);
    ctx.bootstrap->send(peer, tag, &offer, sizeof(offer));
    if (!c->sameProcess) {
      // The name can go once the sender has mapped it: nothing is left in
      // /dev/shm if either process dies later.
      ShmAck ack;
      ctx.bootstrap->recv(peer, tag, &ack, sizeof(ack));
      c->fifoSegment->unlink();
    }
    return c;
  }

  std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) override {
    auto c = std::make_unique<ShmConnection>();
    c->sameProcess = sameProcess(ctx, peer);
    ShmOffer offer;
    ctx.bootstrap->recv(peer, tag, &offer, sizeof(offer));
    const size_t bytes = fifoBytes(ctx.geometry.nSlots, ctx.geometry.slotBytes);
    if (const std::string bad = shmOfferProblem(offer, bytes, c->sameProcess); !bad.empty())
      raise(weftInternalError, "shm: rank %d offered a FIFO this rank cannot use (%s)", peer, bad.c_str());
    void* mem;
    if (c->sameProcess) {
      c->heap = local_handles::take(offer.token);
      mem = c->heap.get();
      if (!mem) raise(weftRemoteError, "shm: rank %d says it is a thread of this process, but its FIFO is not here", peer);
    } else {
      c->fifoSegment = ShmSegment::open(offer.name, bytes);
      mem = c->fifoSegment->data();
      ShmAck ack;
      ctx.bootstrap->send(peer, tag, &ack, sizeof(ack));
    }
    auto* hdr = static_cast<FifoHeader*>(mem);
    if (hdr->magic != kFifoMagic) raise(weftInternalError, "shm: FIFO from rank %d is not initialised", peer);
    // The slots start where this rank's own layout puts them: the header is
    // the peer's to write, so nothing in it steers where this rank writes.
    c->end.attach(hdr, static_cast<char*>(mem) + (bytes - size_t(ctx.geometry.nSlots) * ctx.geometry.slotBytes),
                  ctx.geometry);
    c->end.producerBell = ctx.localBell;
    c->end.consumerBell = peerDoorbell(ctx, peer);
    return c;
  }
};

}  // namespace

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<ShmTransport>(); }

}  // namespace weft
