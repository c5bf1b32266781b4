// The process's progress thread: it takes the messages out of its QPs'
// inboxes (the responder and the requester's acknowledgements), sends the
// queued requests, acknowledgements and read responses into the peers'
// inboxes, and fails requests whose peer cannot be reached. It also fires
// the time-based faults.
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "lbv_internal.h"

namespace lbv {

bool forkBroken();

namespace {

bool portDownFor(Process& p, Qp* q) {
  if (p.devs[q->ctx->devIndex].ports[q->port - 1].down) return true;
  return p.portDown.load() && q->ctx->devIndex == 0 && q->port == p.faults.portDownPort;
}

uint64_t retryNs(Process& p, Qp* q) {
  // 4.096 us * 2^timeout per try, retry_cnt + 1 tries; capped for tests.
  double ns = 4096.0 * double(uint64_t(1) << (q->timeout ? q->timeout : 14)) * double(q->retryCnt + 1);
  double cap = double(p.faults.retryMs) * 1e6;
  return static_cast<uint64_t>(ns < cap ? ns : cap);
}

bool ringHasRoom(QpShared* s) {
  return s->head.load(std::memory_order_relaxed) - s->tail.load(std::memory_order_acquire) < kRing;
}

Msg& nextSlot(QpShared* s) { return s->ring[s->head.load(std::memory_order_relaxed) % kRing]; }

void publish(QpShared* s) { s->head.store(s->head.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

// Maps the peer's inbox and says whether a packet sent now could arrive.
bool reachable(Process& p, Qp* q) {
  if (portDownFor(p, q)) return false;
  if (q->peerQpn != q->destQpn || !q->peer) {
    if (q->peer) munmap(q->peer, sizeof(QpShared));
    q->peer = static_cast<QpShared*>(mapShared(p.fabric + "-q" + std::to_string(q->destQpn), sizeof(QpShared), false));
    q->peerQpn = q->destQpn;
    if (q->peer && q->peer->magic != kQpMagic) {
      munmap(q->peer, sizeof(QpShared));
      q->peer = nullptr;
    }
  }
  QpShared* r = q->peer;
  if (!r || r->destroyed.load() || r->portDown.load() || r->psnRefused.load()) return false;
  // Whether the owner still lives: a system call, so not at every pass.
  const uint64_t now = nowNs();
  if (now - q->peerCheckedNs > 5000000ull) {
    q->peerAlive = !(kill(r->pid, 0) != 0 && errno == ESRCH);
    q->peerCheckedNs = now;
  }
  if (!q->peerAlive) return false;
  uint32_t st = r->state.load();
  if (st != IBV_QPS_RTR && st != IBV_QPS_RTS) return false;
  if (r->remoteQpn.load() != q->qp.qp_num) return false;
  if (r->linkLayer != q->self->linkLayer) return false;
  if (!samePartition(r->pkey, q->self->pkey)) return false;  // different partitions, or both limited members
  // IB across subnets: only a GRH (routed by the destination GID, with hops
  // to spare) reaches the peer.
  if (r->linkLayer == IBV_LINK_LAYER_INFINIBAND && std::memcmp(r->gids[0], q->self->gids[0], 8) != 0 &&
      (!q->ah.is_global || q->ah.grh.hop_limit < 2))
    return false;
  if (r->linkLayer == IBV_LINK_LAYER_ETHERNET || q->ah.is_global) {
    const uint8_t* dgid = q->ah.grh.dgid.raw;
    if (std::memcmp(dgid, r->gids[0], 16) != 0 && std::memcmp(dgid, r->gids[1], 16) != 0) return false;
    // RoCE v2 routes by IP: an IPv4-mapped source cannot reach an IPv6
    // destination, nor the reverse.
    auto v4 = [](const uint8_t* g) { return g[10] == 0xff && g[11] == 0xff && g[0] == 0 && g[9] == 0; };
    const uint8_t* sgid = q->self->gids[q->ah.grh.sgid_index < 2 ? q->ah.grh.sgid_index : 0];
    if (v4(sgid) != v4(dgid)) return false;
  } else if (q->ah.dlid != r->lid) {
    return false;
  }
  return true;
}

// Counts a successful requester completion against the faults; returns
// the status it completes with.
ibv_wc_status countCompletion(Process& p, Qp* q, bool* toError, bool* fatal) {
  long n = ++p.completions;
  const Faults& f = p.faults;
  if (f.exitAfter > 0 && n >= f.exitAfter) _exit(43);  // the peer vanishes, like SIGKILL
  const long onQp = ++q->completions;
  const bool wcHere = f.wcQp > 0 ? q->index == f.wcQp && onQp == f.wcAfter : n == f.wcAfter;
  if (f.wcAfter > 0 && wcHere) {
    *toError = true;
    return static_cast<ibv_wc_status>(f.wcStatus);
  }
  if (f.qpErrorAfter > 0 && n == f.qpErrorAfter) *toError = *fatal = true;
  return IBV_WC_SUCCESS;
}

void finishRequest(Process& p, Qp* q) {
  SendWqe w = std::move(q->inflight.front());
  q->inflight.pop_front();
  bool toError = false, fatal = false;
  ibv_wc_status st = countCompletion(p, q, &toError, &fatal);
  completeSend(q, w, st);
  if (toError) moveToError(q, fatal);
}

void queueControl(Qp* q, uint32_t kind, uint32_t psn, uint32_t status) {
  Msg m;
  m.kind = kind;
  m.psn = psn;
  m.status = status;
  m.flags = kFirst | kLast;
  m.len = 0;
  q->control.push_back(m);
}

// Places `n` bytes of an emulated DMA write at `dst`. A NIC writes an
// aligned word of up to 8 bytes in one piece and after its earlier writes,
// and weft polls such words with acquire loads and no completion in between
// (the credit word of ib_connection.cc): the provider stores them atomically
// with release order, as the hardware behaves, so that ThreadSanitizer sees
// an ordered pair of atomics there instead of a plain memcpy racing a load.
// Longer writes are read only after their completion, which the CQ's lock
// orders; weft touching such a buffer before that is still reported.
void dmaWrite(void* dst, const void* src, uint64_t n) {
  const auto at = reinterpret_cast<uintptr_t>(dst);
  if (n == 8 && at % 8 == 0) {
    uint64_t v;
    std::memcpy(&v, src, 8);
    std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(dst)).store(v, std::memory_order_release);
  } else if (n == 4 && at % 4 == 0) {
    uint32_t v;
    std::memcpy(&v, src, 4);
    std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(dst)).store(v, std::memory_order_release);
  } else {
    std::memcpy(dst, src, n);
  }
}

// Scatters `len` bytes at `offset` of a request into an sge list.
void scatter(const std::vector<ibv_sge>& sge, uint64_t offset, const uint8_t* data, uint64_t len) {
  for (const ibv_sge& s : sge) {
    if (len == 0) return;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    uint64_t n = s.length - offset < len ? s.length - offset : len;
    dmaWrite(reinterpret_cast<uint8_t*>(s.addr) + offset, data, n);
    data += n;
    len -= n;
    offset = 0;
  }
}

void gather(const std::vector<ibv_sge>& sge, uint64_t offset, uint8_t* out, uint64_t len) {
  for (const ibv_sge& s : sge) {
    if (len == 0) return;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    uint64_t n = s.length - offset < len ? s.length - offset : len;
    std::memcpy(out, reinterpret_cast<const uint8_t*>(s.addr) + offset, n);
    out += n;
    len -= n;
    offset = 0;
  }
}

// A receive for an immediate or a send; false: none posted (RNR).
bool takeRecv(Process& p, Qp* q, const Msg& m) {
  if (q->haveRecv) return true;
  if (q->rq.empty()) {
    if (q->rnrRetry == 7) return false;  // retried forever
    if (!q->rnrSinceNs) q->rnrSinceNs = nowNs();
    if (nowNs() - q->rnrSinceNs < uint64_t(q->rnrRetry + 1) * 10000000ull) return false;
    queueControl(q, kNak, m.psn, IBV_WC_RNR_RETRY_EXC_ERR);
    q->dropping = true;
    return true;
  }
  q->rnrSinceNs = 0;
  q->curRecv = std::move(q->rq.front());
  q->rq.pop_front();
  q->haveRecv = true;
  return true;
}

// The first message of a request: PSN, access, receive. false: stall (RNR).
bool admitRequest(Process& p, Qp* q, const Msg& m) {
  q->dropping = false;
  if (m.psn != q->expectPsn) {
    // A real responder drops it (and NAKs a sequence error the requester
    // retries until it gives up): the requester's view is "unreachable".
    q->self->psnRefused.store(1);
    q->dropping = true;
    return true;
  }
  if (m.kind == kWrite) {
    // p.mu is held by the loop.
    bool ok = (q->access & IBV_ACCESS_REMOTE_WRITE) && findMr(p, m.rkey, m.remoteAddr, m.total, IBV_ACCESS_REMOTE_WRITE);
    if (!ok) {
      queueControl(q, kNak, m.psn, IBV_WC_REM_ACCESS_ERR);
      q->dropping = true;
      return true;
    }
  }
  if (m.kind == kSend || (m.flags & kImm)) {
    if (!takeRecv(p, q, m)) return false;
    if (q->dropping) return true;
    uint64_t room = 0;
    for (const ibv_sge& s : q->curRecv.sge) room += s.length;
    if (m.kind == kSend && m.total > room) {
      queueControl(q, kNak, m.psn, IBV_WC_REM_INV_REQ_ERR);
      q->dropping = true;
    }
  }
  return true;
}

// One request message (write or send). false: leave it in the inbox.
bool takeRequest(Process& p, Qp* q, const Msg& m) {
  if ((m.flags & kFirst) && !admitRequest(p, q, m)) return false;
  if (!q->dropping && m.len) {
    if (m.kind == kWrite) {
      Mr* mr = findMr(p, m.rkey, m.remoteAddr, m.total, IBV_ACCESS_REMOTE_WRITE);
      if (mr && !mr->stale) dmaWrite(reinterpret_cast<void*>(m.remoteAddr + m.offset), m.data, m.len);
    } else {
      scatter(q->curRecv.sge, m.offset, m.data, m.len);
    }
  }
  if (!(m.flags & kLast)) return true;
  if (!q->dropping) {
    if (m.kind == kSend || (m.flags & kImm)) {
      ibv_wc wc{};
      wc.wr_id = q->curRecv.wrId;
      wc.status = IBV_WC_SUCCESS;
      wc.opcode = m.kind == kSend ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM;
      wc.byte_len = static_cast<uint32_t>(m.total);
      if (m.flags & kImm) {
        wc.wc_flags = IBV_WC_WITH_IMM;
        wc.imm_data = m.imm;
      }
      wc.qp_num = q->qp.qp_num;
      wc.src_qp = q->destQpn;
      pushCqe(q->recvCq, wc);
      q->haveRecv = false;
    }
    queueControl(q, kAck, m.psn, 0);
  }
  if (m.psn == q->expectPsn) q->expectPsn = (q->expectPsn + 1) & 0xffffff;
  q->dropping = false;
  return true;
}

void takeReadRequest(Process& p, Qp* q, const Msg& m) {
  if (m.psn != q->expectPsn) {
    q->self->psnRefused.store(1);
    return;
  }
  q->expectPsn = (q->expectPsn + 1) & 0xffffff;
  if (!(q->access & IBV_ACCESS_REMOTE_READ) || !findMr(p, m.rkey, m.remoteAddr, m.total, IBV_ACCESS_REMOTE_READ)) {
    queueControl(q, kNak, m.psn, IBV_WC_REM_ACCESS_ERR);
    return;
  }
  q->reads.push_back(ReadJob{m.psn, m.remoteAddr, m.total});
}

void takeResponse(Process& p, Qp* q, const Msg& m) {
  if (q->inflight.empty() || q->inflight.front().psn != m.psn) return;  // stale (flushed) request
  SendWqe& w = q->inflight.front();
  if (m.kind == kNak) {
    SendWqe failed = std::move(w);
    q->inflight.pop_front();
    completeSend(q, failed, static_cast<ibv_wc_status>(m.status));
    moveToError(q, false);
    return;
  }
  if (m.kind == kReadResp) {
    scatter(w.sge, m.offset, m.data, m.len);
    w.readBytes += m.len;
    if (!(m.flags & kLast)) return;
  } else if (w.wr.opcode == IBV_WR_RDMA_READ) {
    return;  // reads complete with their data
  }
  finishRequest(p, q);
}

bool receive(Process& p, Qp* q) {
  QpShared* s = q->self;
  bool busy = false;
  while (s->tail.load(std::memory_order_relaxed) != s->head.load(std::memory_order_acquire)) {
    const Msg& m = s->ring[s->tail.load(std::memory_order_relaxed) % kRing];
    const bool down = portDownFor(p, q);
    if (q->state == IBV_QPS_INIT) break;  // not listening yet: the requester retries later
    if (q->state == IBV_QPS_RTR || q->state == IBV_QPS_RTS) {
      if (down) {
        // dropped on the wire
      } else if (m.kind == kWrite || m.kind == kSend) {
        if (!takeRequest(p, q, m)) break;
      } else if (m.kind == kReadReq) {
        takeReadRequest(p, q, m);
      } else {
        takeResponse(p, q, m);
      }
    }
    s->tail.store(s->tail.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    busy = true;
  }
  return busy;
}

// Local keys of a request, checked when the HCA would first use them.
bool localKeysOk(Process& p, const SendWqe& w) {
  int need = w.wr.opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_LOCAL_WRITE : 0;
  for (const ibv_sge& s : w.sge)
    if (s.length && !findMr(p, s.lkey, s.addr, s.length, need)) return false;
  return true;
}

bool sendRequests(Process& p, Qp* q) {
  bool busy = false;
  while (!q->sq.empty() && ringHasRoom(q->peer) && q->state == IBV_QPS_RTS) {
    SendWqe& w = q->sq.front();
    if (w.sentBytes == 0 && !localKeysOk(p, w)) {
      SendWqe bad = std::move(w);
      q->sq.pop_front();
      completeSend(q, bad, IBV_WC_LOC_PROT_ERR);
      moveToError(q, false);
      return true;
    }
    Msg& m = nextSlot(q->peer);
    bool read = w.wr.opcode == IBV_WR_RDMA_READ;
    bool send = w.wr.opcode == IBV_WR_SEND || w.wr.opcode == IBV_WR_SEND_WITH_IMM;
    m.kind = read ? kReadReq : send ? kSend : kWrite;
    m.psn = w.psn;
    m.imm = w.wr.imm_data;
    m.remoteAddr = w.wr.wr.rdma.remote_addr;
    m.rkey = w.wr.wr.rdma.rkey;
    m.total = w.total;
    m.offset = w.sentBytes;
    uint64_t left = read ? 0 : w.total - w.sentBytes;
    m.len = static_cast<uint32_t>(left < kChunk ? left : kChunk);
    m.flags = (w.sentBytes == 0 ? uint32_t(kFirst) : 0u) | (m.len == left ? uint32_t(kLast) : 0u);
    if (w.wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w.wr.opcode == IBV_WR_SEND_WITH_IMM) m.flags |= kImm;
    gather(w.sge, w.sentBytes, m.data, m.len);
    publish(q->peer);
    busy = true;
    w.sentBytes += m.len;
    if (m.flags & kLast) {
      q->inflight.push_back(std::move(w));
      q->sq.pop_front();
    }
  }
  return busy;
}

bool sendResponses(Qp* q) {
  bool busy = false;
  while (!q->control.empty() && ringHasRoom(q->peer)) {
    Msg& m = nextSlot(q->peer);
    const Msg& c = q->control.front();
    m.kind = c.kind;
    m.psn = c.psn;
    m.status = c.status;
    m.flags = c.flags;
    m.len = 0;
    publish(q->peer);
    q->control.pop_front();
    busy = true;
  }
  while (!q->reads.empty() && ringHasRoom(q->peer)) {
    ReadJob& r = q->reads.front();
    Msg& m = nextSlot(q->peer);
    uint64_t left = r.total - r.sent;
    m.kind = kReadResp;
    m.psn = r.psn;
    m.offset = r.sent;
    m.total = r.total;
    m.len = static_cast<uint32_t>(left < kChunk ? left : kChunk);
    m.flags = (r.sent == 0 ? uint32_t(kFirst) : 0u) | (m.len == left ? uint32_t(kLast) : 0u);
    std::memcpy(m.data, reinterpret_cast<const void*>(r.addr + r.sent), m.len);
    publish(q->peer);
    r.sent += m.len;
    if (m.flags & kLast) q->reads.pop_front();
    busy = true;
  }
  return busy;
}

bool transmit(Process& p, Qp* q) {
  if (q->state != IBV_QPS_RTS && q->state != IBV_QPS_RTR) return false;
  bool pending = !q->sq.empty() || !q->inflight.empty() || !q->control.empty() || !q->reads.empty();
  if (!pending) {
    q->unreachableSinceNs = 0;
    return false;
  }
  if (!reachable(p, q)) {
    uint64_t now = nowNs();
    if (!q->unreachableSinceNs) q->unreachableSinceNs = now;
    if (now - q->unreachableSinceNs < retryNs(p, q) || (q->sq.empty() && q->inflight.empty())) return false;
    auto& list = q->inflight.empty() ? q->sq : q->inflight;
    SendWqe w = std::move(list.front());
    list.pop_front();
    completeSend(q, w, IBV_WC_RETRY_EXC_ERR);
    moveToError(q, false);
    return true;
  }
  q->unreachableSinceNs = 0;
  bool busy = sendResponses(q);
  busy = sendRequests(p, q) || busy;
  if (busy) ring(bellOf(p, q->peer->pid));
  return busy;
}

void fireTimedFaults(Process& p) {
  const Faults& f = p.faults;
  if (f.portDownAfterMs < 0 || p.portDown.load()) return;
  if (nowNs() - p.startNs < uint64_t(f.portDownAfterMs) * 1000000ull) return;
  p.portDown.store(true);
  for (Context* c : p.contexts) {
    if (c->devIndex != 0) continue;
    ibv_async_event e{};
    e.element.port_num = f.portDownPort;
    e.event_type = IBV_EVENT_PORT_ERR;
    c->pushEvent(e);
  }
  for (Qp* q : p.qps)
    if (q->ctx->devIndex == 0 && q->port == f.portDownPort) q->self->portDown.store(1);
}

void progressMain() {
  Process& p = proc();
  uint32_t seen = p.bell->load();
  for (;;) {
    bool busy = false;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      fireTimedFaults(p);
      for (Qp* q : p.qps) {
        std::lock_guard<std::mutex> ql(q->mu);
        busy = receive(p, q) || busy;
        busy = transmit(p, q) || busy;
      }
    }
    uint32_t now = p.bell->load(std::memory_order_acquire);
    if (busy || now != seen) {
      seen = now;
      continue;
    }
    timespec ts{0, 1000000};  // bounded: timers and full inboxes need a look now and then
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(p.bell), FUTEX_WAIT, seen, &ts, nullptr, 0);
    seen = p.bell->load(std::memory_order_acquire);
  }
}

// Without fork support a fork leaves the parent's registered pages
// copy-on-write: from then on the HCA writes the child's copies.
void afterForkInParent() {
  Process& p = proc();
  if (!forkBroken()) return;
  std::lock_guard<std::mutex> lock(p.mu);
  for (auto& [key, mr] : p.mrs) mr->stale = true;
}

// The child has no progress thread, and its copies of the parent's
// objects belong to the parent (as with a real HCA, a child opens its own
// devices): it starts afresh. The parent's threads may have held the locks.
void afterForkInChild() {
  Process& p = proc();
  new (&p.mu) std::mutex;
  p.qps.clear();
  p.contexts.clear();
  p.mrs.clear();
  p.peerBells.clear();
  p.bell = nullptr;
  p.started = false;
  p.progress = std::thread();
}

// At exit() the names of this process's segments go: its bell and the
// inboxes of QPs it never destroyed (the mappings stay until the process
// is gone, so its progress thread, still running, is unaffected; a peer
// that has not mapped them yet finds the process unreachable, as it would
// a moment later). The fabric's QP-number counter is shared and stays. A
// process that ends in _exit() or a signal leaves them: tests sweep their
// fabrics (tests/ib/loopback_verbs/ibloop_env.h).
void unlinkOwnSegments() {
  Process& p = proc();
  if (!p.started) return;  // a forked child that never opened a device
  std::lock_guard<std::mutex> lock(p.mu);
  shm_unlink(("/" + bellName(p, getpid())).c_str());
  for (Qp* q : p.qps) shm_unlink(("/" + q->shmName).c_str());
}

}  // namespace

void startProgress(Process& p) {
  if (p.started) return;
  p.started = true;
  p.bell = bellOf(p, getpid());
  static bool handlers = false;
  if (!handlers) {
    pthread_atfork(nullptr, afterForkInParent, afterForkInChild);
    std::atexit(unlinkOwnSegments);
  }
  handlers = true;
  p.progress = std::thread(progressMain);
  p.progress.detach();
}

}  // namespace lbv
