// The RC queue pair: its state machine with the attribute checks of the
// verbs specification (ibv_modify_qp), and completions.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lbv_internal.h"

namespace lbv {

namespace {

constexpr int kResetToInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kInitToRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtrToRts =
    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
// Optional attributes each transition accepts besides the required ones.
constexpr int kInitOptional = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrOptional = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
constexpr int kRtsOptional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH |
                             IBV_QP_PATH_MIG_STATE;

// LOOPBACK_VERBS_EXPECT: the attribute must have the expected value.
bool expected(uint32_t qpn, const char* what, int want, int got) {
  if (want < 0 || want == got) return true;
  std::fprintf(stderr, "loopback verbs: QP %u: %s is %d, LOOPBACK_VERBS_EXPECT wants %d\n", qpn, what, got, want);
  return false;
}

// required ⊆ mask ⊆ required | optional
bool maskFits(int mask, int required, int optional) {
  return (mask & required) == required && (mask & ~(required | optional)) == 0;
}

int checkAv(Qp* q, const ibv_qp_attr* a) {
  Process& p = proc();
  const auto& ports = p.devs[q->ctx->devIndex].ports;
  if (a->ah_attr.port_num != 0 && a->ah_attr.port_num != q->port) return EINVAL;
  bool roce = ports[q->port - 1].linkLayer == IBV_LINK_LAYER_ETHERNET;
  if (roce) {
    // RoCE has no LIDs: every packet needs a GRH with a valid source GID.
    if (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= 2) return EINVAL;
  } else if (a->ah_attr.dlid == 0 && !a->ah_attr.is_global) {
    return EINVAL;
  }
  const Expect& x = proc().expect;
  const uint32_t n = q->qp.qp_num;
  if (!expected(n, "is_global", x.grh, a->ah_attr.is_global) || !expected(n, "sl", x.sl, a->ah_attr.sl)) return EINVAL;
  if (a->ah_attr.is_global && (!expected(n, "hop_limit", x.hopLimit, a->ah_attr.grh.hop_limit) ||
                               !expected(n, "traffic_class", x.trafficClass, a->ah_attr.grh.traffic_class)))
    return EINVAL;
  if (a->ah_attr.sl > 15) return EINVAL;
  // The MTU comes from a C caller as any int: read as one, since a value
  // outside enum ibv_mtu cannot be loaded as it in C++.
  int mtu = 0;
  static_assert(sizeof(a->path_mtu) == sizeof(mtu));
  memcpy(&mtu, &a->path_mtu, sizeof(mtu));
  if (mtu < IBV_MTU_256 || mtu > IBV_MTU_4096) return EINVAL;
  if (a->dest_qp_num == 0 || a->dest_qp_num > 0xffffff) return EINVAL;
  return 0;
}

int toInit(Qp* q, const ibv_qp_attr* a, int mask) {
  int nPorts = static_cast<int>(proc().devs[q->ctx->devIndex].ports.size());
  if (mask & IBV_QP_PORT) {
    if (a->port_num < 1 || a->port_num > nPorts) return EINVAL;
    q->port = a->port_num;
  }
  if (mask & IBV_QP_PKEY_INDEX) {
    if (a->pkey_index >= proc().pkeys.size() ||
        !expected(q->qp.qp_num, "pkey_index", proc().expect.pkeyIndex, a->pkey_index))
      return EINVAL;
    q->self->pkey = proc().pkeys[a->pkey_index];
  }
  if (mask & IBV_QP_ACCESS_FLAGS) q->access = a->qp_access_flags;
  const PortConf& pc = proc().devs[q->ctx->devIndex].ports[q->port - 1];
  q->self->linkLayer = static_cast<uint32_t>(pc.linkLayer);
  q->self->lid = pc.linkLayer == IBV_LINK_LAYER_ETHERNET ? 0 : static_cast<uint16_t>(q->ctx->devIndex * 16 + q->port + 1);
  for (int i = 0; i < 2; ++i) gidOf(q->ctx->devIndex, q->port, i, q->self->gids[i]);
  return 0;
}

int transition(Qp* q, int cur, int next, const ibv_qp_attr* a, int mask) {
  if (next == IBV_QPS_RESET) return 0;
  if (next == IBV_QPS_ERR) return 0;
  if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
    if (!maskFits(mask, kResetToInit, 0)) return EINVAL;
    return toInit(q, a, mask);
  }
  if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) {
    if (!maskFits(mask, IBV_QP_STATE, kInitOptional)) return EINVAL;
    return toInit(q, a, mask);
  }
  if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
    if (!maskFits(mask, kInitToRtr, kRtrOptional)) return EINVAL;
    if (int rc = checkAv(q, a)) return rc;
    if (a->max_dest_rd_atomic > 16) return EINVAL;
    if (mask & IBV_QP_ACCESS_FLAGS) q->access = a->qp_access_flags;
    q->ah = a->ah_attr;
    q->mtu = a->path_mtu;
    q->destQpn = a->dest_qp_num;
    q->rqPsn = a->rq_psn & 0xffffff;
    q->expectPsn = q->rqPsn;
    q->self->remoteQpn.store(q->destQpn);
    q->self->psnRefused.store(0);
    return 0;
  }
  if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
    if (!maskFits(mask, kRtrToRts, kRtsOptional)) return EINVAL;
    if (a->timeout > 31 || a->retry_cnt > 7 || a->rnr_retry > 7 || a->max_rd_atomic > 16) return EINVAL;
    const Expect& x = proc().expect;
    if (!expected(q->qp.qp_num, "timeout", x.timeout, a->timeout) ||
        !expected(q->qp.qp_num, "retry_cnt", x.retryCnt, a->retry_cnt))
      return EINVAL;
    q->sqPsn = a->sq_psn & 0xffffff;
    q->timeout = a->timeout;
    q->retryCnt = a->retry_cnt;
    q->rnrRetry = a->rnr_retry;
    return 0;
  }
  if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS) return maskFits(mask, IBV_QP_STATE, kRtsOptional) ? 0 : EINVAL;
  return EINVAL;
}

}  // namespace

void pushCqe(Cq* cq, const ibv_wc& wc) {
  Process& p = proc();
  std::lock_guard<std::mutex> lock(cq->mu);
  if (cq->q.size() >= cq->cap) {
    // The real CQ overflows: an async CQ error, and the CQ is unusable.
    if (!cq->overflowed) {
      cq->overflowed = true;
      ibv_async_event e{};
      e.element.cq = &cq->cq;
      e.event_type = IBV_EVENT_CQ_ERR;
      reinterpret_cast<Context*>(cq->cq.context)->pushEvent(e);
    }
    return;
  }
  Cqe e;
  e.wc = wc;
  if (p.faults.delayUs > 0) {
    p.rng = p.rng * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t ready = nowNs() + ((p.rng >> 33) % uint64_t(p.faults.delayUs)) * 1000;
    uint64_t& last = cq->lastReady[wc.qp_num];
    if (ready < last) ready = last;  // one QP's completions stay in order
    last = ready;
    e.readyNs = ready;
  }
  cq->q.push_back(e);
}

void completeSend(Qp* q, const SendWqe& w, ibv_wc_status status) {
  if (status == IBV_WC_SUCCESS && !w.signaled) return;
  ibv_wc wc{};
  wc.wr_id = w.wr.wr_id;
  wc.status = status;
  switch (w.wr.opcode) {
    case IBV_WR_RDMA_READ: wc.opcode = IBV_WC_RDMA_READ; break;
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: wc.opcode = IBV_WC_SEND; break;
    default: wc.opcode = IBV_WC_RDMA_WRITE; break;
  }
  if (w.wr.opcode == IBV_WR_RDMA_READ) wc.byte_len = static_cast<uint32_t>(w.total);
  wc.qp_num = q->qp.qp_num;
  wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : 0x4c42;  // "LB"
  pushCqe(q->sendCq, wc);
}

void moveToError(Qp* q, bool fatalEvent) {
  if (q->state == IBV_QPS_ERR) return;
  q->state = IBV_QPS_ERR;
  q->qp.state = IBV_QPS_ERR;
  q->self->state.store(IBV_QPS_ERR);
  // Every outstanding request and receive completes flushed.
  for (auto* list : {&q->inflight, &q->sq})
    for (const SendWqe& w : *list) completeSend(q, w, IBV_WC_WR_FLUSH_ERR);
  q->inflight.clear();
  q->sq.clear();
  if (q->haveRecv) q->rq.push_front(q->curRecv), q->haveRecv = false;
  for (const RecvWqe& r : q->rq) {
    ibv_wc wc{};
    wc.wr_id = r.wrId;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = q->qp.qp_num;
    pushCqe(q->recvCq, wc);
  }
  q->rq.clear();
  q->reads.clear();
  if (fatalEvent) {
    ibv_async_event e{};
    e.element.qp = &q->qp;
    e.event_type = IBV_EVENT_QP_FATAL;
    q->ctx->pushEvent(e);
  }
}

Mr* findMr(Process& p, uint32_t key, uint64_t addr, uint64_t len, int needAccess) {
  auto it = p.mrs.find(key);
  if (it == p.mrs.end()) return nullptr;
  Mr* m = it->second;
  uint64_t base = reinterpret_cast<uint64_t>(m->mr.addr);
  if (addr < base || addr + len > base + m->mr.length || addr + len < addr) return nullptr;
  if ((m->access & needAccess) != needAccess) return nullptr;
  return m;
}

}  // namespace lbv

using namespace lbv;

extern "C" int ibv_modify_qp(ibv_qp* qph, ibv_qp_attr* a, int mask) {
  if (!qph || !a || !(mask & IBV_QP_STATE)) return EINVAL;
  Qp* q = reinterpret_cast<Qp*>(qph);
  std::lock_guard<std::mutex> lock(q->mu);
  int cur = q->state;
  if ((mask & IBV_QP_CUR_STATE) && static_cast<int>(a->cur_qp_state) != cur) return EINVAL;
  int next = a->qp_state;
  if (int rc = transition(q, cur, next, a, mask)) return rc;
  if (next == IBV_QPS_ERR) {
    moveToError(q, false);
    return 0;
  }
  if (next == IBV_QPS_RESET) {
    q->sq.clear();
    q->inflight.clear();
    q->rq.clear();
    q->reads.clear();
    q->control.clear();
    q->haveRecv = q->dropping = false;
    q->self->remoteQpn.store(0);
  }
  q->state = next;
  q->qp.state = static_cast<ibv_qp_state>(next);
  q->self->state.store(static_cast<uint32_t>(next));
  ring(proc().bell);
  return 0;
}
