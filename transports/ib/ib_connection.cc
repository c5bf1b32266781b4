#include "transports/ib/ib_connection.h"

#include <arpa/inet.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/ib/async_events.h"
#include "transports/ib/conn_info.h"
#include "transports/ib/credits.h"
#include "transports/ib/fifo_memory.h"
#include "transports/ib/flush_schedule.h"
#include "transports/ib/gdr_decision.h"
#include "transports/ib/ib_facts.h"
#include "transports/ib/ib_connection_impl.h"
#include "transports/ib/ib_device.h"
#include "transports/ib/ib_discovery.h"
#include "transports/ib/verbs_loader.h"

namespace weft::ib {

void IbConnection::createQueues(uint32_t nSlots) {
  const Verbs* v = dev_->v;
  int nQps = cfg_.qpsPerConnection;
  // Everything this end can have outstanding: data writes or receives,
  // credit writes, the close notice, the flush read.
  int cqe = nQps * static_cast<int>(2 * nSlots + kMaxCreditWrites + 4) + 16;
  if (wantsGpuSlots()) cqe += 2;
  rankProgress_ = dev_->progressFor(rank_);
  proxy_ = rankProgress_->proxy.get();
  rankProgress_->cq->reserve(cqe, where());
  cqEntries_ = cqe;
  ibv_cq* cq = rankProgress_->cq->cq();
  for (int q = 0; q < nQps; ++q) {
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = nSlots + kMaxCreditWrites + 2;
    init.cap.max_recv_wr = nSlots + 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = v->createQp(dev_->pd, &init);
    if (!qp) raise(weftSystemError, "NET/IB: ibv_create_qp on %s failed: %s", where().c_str(), std::strerror(errno));
    qps_.push_back(qp);
    rankProgress_->cq->attach(qp->qp_num, &inbox_);
    if (dev_->events) dev_->events->watchQp(this, qp->qp_num, [this](const std::string& m) { failAsync(m, false); });
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = static_cast<uint16_t>(cfg_.pkeyIndex);
    a.port_num = static_cast<uint8_t>(choice_.port.port);
    // Both directions write: data one way, credits the other.
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    int rc = v->modifyQp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc) raise(weftSystemError, "NET/IB: QP to INIT on %s failed: %s", where().c_str(), std::strerror(rc));
  }
}

void IbConnection::toReadyToSend(const ConnInfo& remote) {
  const Verbs* v = dev_->v;
  bool roce = choice_.port.linkLayer == LinkLayer::Ethernet;
  for (size_t q = 0; q < qps_.size(); ++q) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = minMtu(remote.mtu, remote_.mtu);
    a.dest_qp_num = remote.qpn[q];
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = static_cast<uint8_t>(choice_.port.port);
    a.ah_attr.sl = static_cast<uint8_t>(cfg_.serviceLevel);
    if (needsGrh(roce, localSubnet_, remote.subnetPrefix)) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(choice_.gidIndex);
      a.ah_attr.grh.hop_limit = 255;
      a.ah_attr.grh.traffic_class = static_cast<uint8_t>(cfg_.trafficClass);
    }
    if (!roce) a.ah_attr.dlid = remote.lid;  // routed IB: the LID of the router toward the peer's subnet
    int rc = v->modifyQp(qps_[q], &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc)
      raise(weftSystemError, "NET/IB: QP to RTR on %s failed: %s (GID index %d, remote QPN %u)", where().c_str(),
            std::strerror(rc), choice_.gidIndex, remote.qpn[q]);
    ibv_qp_attr s{};
    s.qp_state = IBV_QPS_RTS;
    s.sq_psn = psn_;
    s.timeout = static_cast<uint8_t>(cfg_.timeout);
    s.retry_cnt = static_cast<uint8_t>(cfg_.retryCount);
    s.rnr_retry = 7;  // 7 = retry forever on RNR: receives are re-posted by a live proxy
    s.max_rd_atomic = 1;
    rc = v->modifyQp(qps_[q], &s,
                     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc) raise(weftSystemError, "NET/IB: QP to RTS on %s failed: %s", where().c_str(), std::strerror(rc));
  }
}

void IbConnection::postRecv(size_t qpIndex) {
  // Write-with-immediate consumes a receive; the data itself lands by RDMA,
  // so the receive needs no buffer.
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = qpIndex;
  wr.num_sge = 0;
  int rc = ibv_post_recv(qps_[qpIndex], &wr, &bad);
  if (rc) raise(weftSystemError, "NET/IB: ibv_post_recv on %s failed: %s", where().c_str(), std::strerror(rc));
}

// The port as it stands now: active, with the GID the choice names.
IbConnection::PortState IbConnection::openPort() {
  std::string why;
  const Verbs* v = loadVerbs(&why);
  if (!v) raise(weftSystemError, "NET/IB: libibverbs not available: %s", why.c_str());
  dev_ = openIbDevice(v, choice_.port.dev);
  return queryOpenedPort(*v, dev_->ctx, choice_.port.port, choice_.gidIndex, cfg_.pkeyIndex, where());
}

// What the peer needs to reach this end: QPs, PSN, address, and where to
// write (the receiver's slots, or the sender's credit word).
ConnInfo IbConnection::localInfo(const PortState& port, const FifoGeometry& g) const {
  ConnInfo mine;
  mine.role = isSender_ ? ConnRole::Sender : ConnRole::Receiver;
  mine.usable = 1;
  mine.linkLayer = port.attr.link_layer;
  mine.mtu = static_cast<uint8_t>(port.attr.active_mtu);
  mine.srcRank = rank_;
  mine.dstRank = peer_;
  mine.nQps = static_cast<uint32_t>(qps_.size());
  for (size_t q = 0; q < qps_.size(); ++q) mine.qpn[q] = qps_[q]->qp_num;
  mine.psn = psn_;
  mine.lid = port.attr.lid;
  std::memcpy(mine.gid.data(), port.gid.raw, 16);
  mine.gidType = static_cast<uint8_t>(1 + static_cast<int>(choice_.gidType));
  mine.subnetPrefix = subnetPrefixOf(mine.gid);
  mine.pkey = port.pkey;
  mine.nSlots = g.nSlots;
  mine.slotBytes = g.slotBytes;
  if (isSender_) {
    mine.creditAddr = reinterpret_cast<uint64_t>(creditMem_);
    mine.creditRkey = creditMr_.rkey;
  } else {
    mine.fifoAddr = reinterpret_cast<uint64_t>(end_.data);
    mine.fifoRkey = fifo_->slotKeys().rkey;
  }
  return mine;
}

// Swaps ConnInfo with the peer and refuses a peer that does not match this
// end (wrong pair, no IB, different QP count, geometry or link layer).
ConnInfo IbConnection::exchangeInfo(ConnectContext& ctx, uint64_t tag, const ConnInfo& mine) {
  auto wire = encodeConnInfo(mine);
  ctx.bootstrap->send(peer_, tag, wire.data(), wire.size());
  std::vector<uint8_t> got(connInfoWireBytes());
  ctx.bootstrap->recv(peer_, tag, got.data(), got.size());
  ConnInfo remote = decodeConnInfo(got.data(), got.size());
  const ConnRole wantRole = isSender_ ? ConnRole::Receiver : ConnRole::Sender;
  const ConnInfoRefusal refusal =
      connInfoMismatch(mine, remote, wantRole, peer_, rank_, choice_.port.linkLayer, cfg_.pkeyIndex);
  if (refusal.code != weftSuccess) raise(refusal.code, "NET/IB: %s: %s", where().c_str(), refusal.why.c_str());
  const bool roce = choice_.port.linkLayer == LinkLayer::Ethernet;
  if (!roce && remote.subnetPrefix != mine.subnetPrefix)
    WEFT_INFO(kNet | kInit, "NET/IB: %s: peer on subnet %016llx (here %016llx): routed, with a GRH", where().c_str(),
              static_cast<unsigned long long>(remote.subnetPrefix), static_cast<unsigned long long>(mine.subnetPrefix));
  return remote;
}

void IbConnection::connect(ConnectContext& ctx, uint64_t tag) {
  const PortState port = openPort();
  const uint32_t nSlots = ctx.geometry.nSlots;
  const uint64_t slotBytes = ctx.geometry.slotBytes;
  if (slotBytes >= kImmMaxBytes)
    raise(weftInvalidArgument, "NET/IB: slots of %lu bytes exceed the %lu an immediate can describe",
          static_cast<unsigned long>(slotBytes), static_cast<unsigned long>(kImmMaxBytes));
  createQueues(nSlots);

  LoopbackAddress self;
  self.port = port.num;
  self.roce = choice_.port.linkLayer == LinkLayer::Ethernet;
  self.lid = port.attr.lid;
  self.gid = port.gid;
  self.gidIndex = choice_.gidIndex;
  self.mtu = port.attr.active_mtu;
  placeSlots(nSlots, slotBytes, self);
  creditMem_ = static_cast<uint64_t*>(std::aligned_alloc(kPage, kPage));
  if (!creditMem_) raise(weftSystemError, "NET/IB: out of memory for a credit page");
  std::memset(creditMem_, 0, kPage);
  end_.attach(fifo_->hdr(), fifo_->data(), ctx.geometry);
  // The executor sleeps on its own bell; the rank's proxy on the service's.
  end_.producerBell = isSender_ ? ctx.localBell : proxy_->bell();
  end_.consumerBell = isSender_ ? proxy_->bell() : ctx.localBell;
  creditMr_ = dev_->hostMrs->acquire(creditMem_, kPage);

  if (!isSender_)
    for (size_t q = 0; q < qps_.size(); ++q)
      for (uint32_t i = 0; i < nSlots; ++i) postRecv(q);

  std::random_device rd;
  psn_ = rd() & 0xffffff;
  const ConnInfo mine = localInfo(port, ctx.geometry);
  remote_.mtu = mine.mtu;  // toReadyToSend takes the smaller of the two
  localSubnet_ = mine.subnetPrefix;
  const ConnInfo remote = exchangeInfo(ctx, tag, mine);
  toReadyToSend(remote);
  remote_ = remote;

  // Neither side may write before the other's QPs are in RTR with receives
  // posted, or the first packets would be dropped and retried for seconds.
  uint32_t ready = kReadyWord, peerReady = 0;
  ctx.bootstrap->send(peer_, tag, &ready, sizeof ready);
  ctx.bootstrap->recv(peer_, tag, &peerReady, sizeof peerReady);
  if (peerReady != kReadyWord) raise(weftRemoteError, "NET/IB: %s: bad ready word 0x%08x", where().c_str(), peerReady);

  progress_.emplace(nSlots, flushQp_ != nullptr);
  proxy_->add(this);
  WEFT_INFO(kNet | kInit, "NET/IB: rank %d %s rank %d via %s, GID index %d, MTU %d, %zu QP(s), %u slots of %lu bytes",
            rank_, isSender_ ? "->" : "<-", peer_, describe().c_str(), choice_.gidIndex, 128 << port.attr.active_mtu,
            qps_.size(), nSlots, static_cast<unsigned long>(slotBytes));
  if (device_) {
    std::string detail;
    if (!isSender_ && fifo_->mode() != GdrMode::Staged)
      detail = device_->flushReason;
    logDeviceEdge(rank_, peer_, isSender_, device_->gdr, detail);
  }
}

void IbConnection::placeSlots(uint32_t nSlots, uint64_t slotBytes, const LoopbackAddress& self) {
  if (wantsGpuSlots()) {
    try {
      fifo_ = std::make_unique<IbFifoMemory>(dev_, device_->gdr.mode, device_->cudaDev, nSlots, slotBytes);
      if (!isSender_ && device_->flush) {
        flushQp_ = std::make_unique<FlushQp>(*dev_, rankProgress_->cq->cq(), self, cfg_, where());
        rankProgress_->cq->attach(flushQp_->qpNum(), &inbox_);
      }
      return;
    } catch (const Error& e) {
      // The cause is already logged (raise warns); say what happens next.
      flushQp_.reset();
      fifo_.reset();
      WEFT_WARN("NET/IB: %s: GPU Direct RDMA (%s) not possible for GPU %d; this connection stages through host "
                "memory",
                where().c_str(), gdrModeName(device_->gdr.mode), device_->cudaDev);
      device_->gdr = GdrDecision::staged(std::string("GPU memory registration failed: ") + e.what());
    }
  }
  fifo_ = std::make_unique<IbFifoMemory>(dev_, nSlots, slotBytes);
}

void IbConnection::failAsync(const std::string& msg, bool logged) {
  if (!logged) WEFT_WARN("%s", msg.c_str());
  end_.fail();
  if (onAsyncError_) {
    try {
      onAsyncError_(weftRemoteError, msg);
    } catch (...) {
      // The handler belongs to the core; a throw from it must not kill the process.
    }
  }
}

void IbConnection::completionError(const ibv_wc& wc) {
  const Verbs* v = dev_->v;
  // A port event seen before (port down) is the likeliest cause.
  const std::string port = dev_->events ? dev_->events->portNote(choice_.port.port) : "";
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "NET/IB: work completion error on %s%s: %s (status %d, vendor error 0x%x, QP %u): %s%s%s",
                where().c_str(), wc.wr_id == kFlushWrId ? " (GPU flush read)" : "", v->wcStatusStr(wc.status),
                static_cast<int>(wc.status), wc.vendor_err, wc.qp_num, completionHint(wc.status),
                port.empty() ? "" : "; ", port.c_str());
  raise(weftRemoteError, "%s", buf);
}

int IbConnection::takeCompletions(ibv_wc* wcs) {
  std::string why;
  const int n = rankProgress_->cq->take(&inbox_, wcs, kPollBatch, &why);
  if (n < 0)
    raise(weftSystemError, "NET/IB: completion queue of %s failed: %s (every connection of rank %d on %s fails with "
          "it)", where().c_str(), why.c_str(), rank_, choice_.port.dev.c_str());
  return n;
}

bool IbConnection::senderStep() {
  CreditWindow& credits = progress_->credits;
  InOrderWindow& done = progress_->order;
  uint32_t& sent = progress_->sent;
  bool progressed = false;
  // The peer RDMA-writes this word; an atomic view keeps the compiler from
  // caching it across iterations.
  uint32_t consumed = static_cast<uint32_t>(std::atomic_ref<uint64_t>(creditMem_[0]).load(std::memory_order_acquire));
  if (credits.onCredit(consumed)) progressed = true;

  FifoHeader* hdr = end_.hdr;
  uint32_t posted = hdr->posted.load(std::memory_order_acquire);
  while (sent != posted && credits.canWrite()) {
    uint32_t slot = sent % hdr->nSlots;
    uint64_t bytes = hdr->sizes[slot];
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(end_.data) + uint64_t(slot) * hdr->slotBytes;
    sge.length = static_cast<uint32_t>(bytes);
    sge.lkey = fifo_->slotKeys().lkey;
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = slot;
    wr.sg_list = bytes ? &sge : nullptr;
    wr.num_sge = bytes ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(encodeImm(slot, bytes));
    wr.wr.rdma.remote_addr = remote_.fifoAddr + uint64_t(slot) * hdr->slotBytes;
    wr.wr.rdma.rkey = remote_.fifoRkey;
    int rc = ibv_post_send(qps_[sent % qps_.size()], &wr, &bad);
    if (rc) raise(weftSystemError, "NET/IB: ibv_post_send on %s failed: %s", where().c_str(), std::strerror(rc));
    credits.onWrite();
    ++sent;
    progressed = true;
  }

  ibv_wc wcs[kPollBatch];
  const int n = takeCompletions(wcs);
  for (int i = 0; i < n; ++i) {
    if (takeCloseCompletion(wcs[i])) continue;
    if (wcs[i].status != IBV_WC_SUCCESS) completionError(wcs[i]);
    done.mark(static_cast<uint32_t>(wcs[i].wr_id), 0);
  }
  // The local staging slot is free once its write completed; frees must go
  // in FIFO order even when QPs complete out of order.
  while (done.take()) {
    end_.release();
    progressed = true;
  }
  return progressed;
}

void IbConnection::postFlush(FlushSchedule& flush) {
  const uint64_t addr = reinterpret_cast<uint64_t>(end_.data) + uint64_t(flush.readSlot()) * end_.hdr->slotBytes;
  flushQp_->postRead(addr, fifo_->slotKeys().rkey, reinterpret_cast<uint64_t>(&creditMem_[kFlushLandingWord]),
                     creditMr_.lkey);
  flush.readPosted();
}

bool IbConnection::receiverStep() {
  CreditReturn& credits = progress_->returns;
  InOrderWindow& arrived = progress_->order;
  FlushSchedule& flush = progress_->flush;
  uint32_t& received = progress_->received;
  bool progressed = false;
  ibv_wc wcs[kPollBatch];
  const int n = takeCompletions(wcs);
  for (int i = 0; i < n; ++i) {
    const ibv_wc& wc = wcs[i];
    if (takeCloseCompletion(wc)) continue;
    if (wc.status != IBV_WC_SUCCESS) {
      if (peerClosed_.load(std::memory_order_relaxed)) {
        afterPeerClosed(wc);
        continue;
      }
      completionError(wc);
    }
    if (wc.wr_id == kFlushWrId) {
      flush.readDone();
      progressed = true;
      continue;
    }
    if (wc.opcode == IBV_WC_RDMA_WRITE) {
      credits.onSendCompleted();
      continue;
    }
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM))
      raise(weftRemoteError, "NET/IB: %s: unexpected completion opcode %d", where().c_str(), static_cast<int>(wc.opcode));
    if (ntohl(wc.imm_data) == kCloseImm) {
      // The sender left, after all its data: no more credits to return.
      peerClosed_.store(true, std::memory_order_release);
      continue;
    }
    ImmData d = decodeImm(ntohl(wc.imm_data));
    if (d.bytes != wc.byte_len || d.bytes > end_.hdr->slotBytes)
      raise(weftRemoteError, "NET/IB: %s: slot %u announced %u bytes, %u arrived (slots hold %lu)", where().c_str(),
            d.slot, d.bytes, wc.byte_len, static_cast<unsigned long>(end_.hdr->slotBytes));
    arrived.mark(d.slot, d.bytes);
    postRecv(wc.wr_id);
    progressed = true;
  }
  // Arrived slots go to the consumer in order, once visible to it: at once
  // for host slots, after a flush read for GPU slots (flush_schedule.h).
  while (auto bytes = arrived.take()) flush.arrived(received++ % end_.hdr->nSlots, *bytes);
  if (flush.readDue()) postFlush(flush);
  while (auto bytes = flush.take()) end_.post(*bytes);

  uint32_t consumed = end_.hdr->consumed.load(std::memory_order_acquire);
  std::optional<uint32_t> value;
  if (!peerClosed_.load(std::memory_order_relaxed)) value = credits.due(consumed);
  if (value) {
    uint64_t* src = &creditMem_[creditWrites_ % (kMaxCreditWrites + 1)];
    *src = *value;
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(src);
    sge.length = sizeof(uint64_t);
    sge.lkey = creditMr_.lkey;
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = ~uint64_t(0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_.creditAddr;
    wr.wr.rdma.rkey = remote_.creditRkey;
    int rc = ibv_post_send(qps_[0], &wr, &bad);
    if (rc) raise(weftSystemError, "NET/IB: credit write on %s failed: %s", where().c_str(), std::strerror(rc));
    credits.onSent(*value);
    ++creditWrites_;
    progressed = true;
  }
  return progressed;
}

bool IbConnection::progress() {
  if (abortFlag_ && abortFlag_->load(std::memory_order_acquire)) return false;
  if (!closePosted_ && closeRequested_.load(std::memory_order_acquire)) {
    closePosted_ = true;
    postGoodbye();
  }
  return isSender_ ? senderStep() : receiverStep();
}

void IbConnection::failed(const std::exception& e) noexcept {
  // weft::Error was logged by raise(); anything else is news.
  if (dynamic_cast<const Error*>(&e))
    failAsync(e.what(), true);
  else
    failAsync(std::string("NET/IB: proxy for ") + where() + " failed: " + e.what(), false);
}

std::unique_ptr<Connection> connectIb(ConnectContext& ctx, int peer, uint64_t tag, bool isSender,
                                      const IbPortChoice& choice, const IbConfig& cfg,
                                      const DevicePlacement* device) {
  auto conn = std::make_unique<IbConnection>(ctx, peer, isSender, choice, cfg, device);
  conn->connect(ctx, tag);
  return conn;
}

}  // namespace weft::ib
