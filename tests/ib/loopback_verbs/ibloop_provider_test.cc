// The loopback verbs provider itself, through the same loader weft uses:
// the QP state machine refuses wrong transitions and missing attributes,
// registrations check their access, and RC semantics hold (in-order
// writes, an immediate after its data, reads, sends, remote access errors,
// flushes, an unreachable peer, async events).
#include <gtest/gtest.h>

#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ibloop_env.h"
#include "src/util/clock.h"
#include "transports/ib/verbs_loader.h"

namespace weft::ib {
namespace {

test::IbloopProcessEnv ibloopEnv;

class Provider : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LOOPBACK_VERBS_DEVICES", "lbv0:1:IB", 1);
    setenv("LOOPBACK_VERBS_FAULTS", faults(), 1);
    static VerbsLoad load = loadVerbsFrom(LOOPBACK_VERBS_LIB);
    ASSERT_TRUE(load.ok) << load.why;
    v = &load.verbs;
    int n = 0;
    ibv_device** list = v->getDeviceList(&n);
    ASSERT_EQ(n, 1);
    ctx = v->openDevice(list[0]);
    v->freeDeviceList(list);
    ASSERT_NE(ctx, nullptr);
    pd = v->allocPd(ctx);
    cq = v->createCq(ctx, 256, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
  }
  void TearDown() override {
    for (ibv_qp* q : qps) v->destroyQp(q);
    for (ibv_mr* m : mrs) v->deregMr(m);
    if (cq) v->destroyCq(cq);
    if (pd) v->deallocPd(pd);
    if (ctx) v->closeDevice(ctx);
  }
  virtual const char* faults() const { return ""; }

  ibv_qp* newQp() {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 64;
    init.cap.max_recv_wr = 64;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    ibv_qp* q = v->createQp(pd, &init);
    if (q) qps.push_back(q);
    return q;
  }
  int toInit(ibv_qp* q, int access) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = access;
    return v->modifyQp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  }
  // `mtu` as a C caller may pass it: any int, put in as its bytes (C++
  // cannot make an int outside enum ibv_mtu into one).
  int toRtr(ibv_qp* q, uint32_t destQpn, uint32_t rqPsn, uint16_t dlid = 2, int mtu = IBV_MTU_4096) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    static_assert(sizeof(a.path_mtu) == sizeof(mtu));
    memcpy(&a.path_mtu, &mtu, sizeof(mtu));
    a.dest_qp_num = destQpn;
    a.rq_psn = rqPsn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = 1;
    a.ah_attr.dlid = dlid;  // lbv0 port 1
    return v->modifyQp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  }
  int toRts(ibv_qp* q, uint32_t sqPsn, int mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = sqPsn;
    a.timeout = 10;  // 4 ms per try
    a.retry_cnt = 3;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    return v->modifyQp(q, &a, mask);
  }
  // Two QPs connected to each other.
  void pair(ibv_qp** a, ibv_qp** b) {
    *a = newQp();
    *b = newQp();
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ASSERT_EQ(toInit(*a, access), 0);
    ASSERT_EQ(toInit(*b, access), 0);
    ASSERT_EQ(toRtr(*a, (*b)->qp_num, 200), 0);
    ASSERT_EQ(toRtr(*b, (*a)->qp_num, 100), 0);
    ASSERT_EQ(toRts(*a, 100), 0);
    ASSERT_EQ(toRts(*b, 200), 0);
  }
  ibv_mr* reg(void* p, size_t n, int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) {
    ibv_mr* m = v->regMr(pd, p, n, access);
    if (m) mrs.push_back(m);
    return m;
  }
  int post(ibv_qp* q, ibv_wr_opcode op, void* local, uint32_t len, uint32_t lkey, uint64_t remote, uint32_t rkey,
           uint64_t id, uint32_t imm = 0) {
    ibv_sge sge{reinterpret_cast<uint64_t>(local), len, lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = imm;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(q, &wr, &bad);
  }
  int postRecv(ibv_qp* q, void* buf, uint32_t len, uint32_t lkey, uint64_t id) {
    ibv_sge sge{reinterpret_cast<uint64_t>(buf), len, lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = buf ? 1 : 0;
    return ibv_post_recv(q, &wr, &bad);
  }
  // Polls until `n` completions arrived or 5 s passed.
  std::vector<ibv_wc> poll(size_t n) {
    std::vector<ibv_wc> out;
    Deadline d = Deadline::after(5000);
    while (out.size() < n && !d.passed()) {
      ibv_wc wc[8];
      int got = ibv_poll_cq(cq, 8, wc);
      for (int i = 0; i < got; ++i) out.push_back(wc[i]);
    }
    return out;
  }

  const Verbs* v = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  std::vector<ibv_qp*> qps;
  std::vector<ibv_mr*> mrs;
};

TEST_F(Provider, StateMachineRefusesWrongTransitionsAndMissingAttributes) {
  ibv_qp* q = newQp();
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(toRtr(q, 9, 0), EINVAL);  // RESET -> RTR
  EXPECT_EQ(toRts(q, 0), EINVAL);     // RESET -> RTS
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  EXPECT_EQ(v->modifyQp(q, &a, IBV_QP_STATE | IBV_QP_PORT), EINVAL);  // no pkey index, no access flags
  a.port_num = 7;
  EXPECT_EQ(v->modifyQp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
  ASSERT_EQ(toInit(q, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE), 0);
  EXPECT_EQ(postRecv(q, nullptr, 0, 0, 1), 0);  // receives may be posted from INIT
  EXPECT_EQ(post(q, IBV_WR_RDMA_WRITE, nullptr, 0, 0, 0, 0, 1), EINVAL);  // sends only from RTS
  EXPECT_EQ(toRts(q, 0), EINVAL);                                          // INIT -> RTS
  EXPECT_EQ(toRtr(q, 9, 0, 2, 9), EINVAL);                                 // no such MTU
  EXPECT_EQ(toRtr(q, 0, 0), EINVAL);                                       // no destination QP
  ASSERT_EQ(toRtr(q, 9, 0), 0);
  EXPECT_EQ(toRts(q, 0, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), EINVAL);  // no retry counts
  EXPECT_EQ(toRts(q, 0), 0);
  ibv_qp_attr e{};
  e.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(v->modifyQp(q, &e, IBV_QP_STATE), 0);
  EXPECT_EQ(toRts(q, 0), EINVAL);  // ERR -> RTS
  e.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(v->modifyQp(q, &e, IBV_QP_STATE), 0);
  EXPECT_EQ(toInit(q, IBV_ACCESS_LOCAL_WRITE), 0);
  // The receive posted before the error came back flushed.
  std::vector<ibv_wc> wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(Provider, RegistrationChecksAccess) {
  static char buf[64];
  errno = 0;
  EXPECT_EQ(v->regMr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_WRITE), nullptr);  // remote write needs local write
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(reg(buf, sizeof buf), nullptr);
}

TEST_F(Provider, WritesLandInOrderAndTheImmediateAfterThem) {
  ibv_qp *a, *b;
  pair(&a, &b);
  std::vector<uint64_t> src(64), dst(64 * 1024, 0);
  ibv_mr* ms = reg(src.data(), src.size() * 8);
  ibv_mr* md = reg(dst.data(), dst.size() * 8);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(postRecv(b, nullptr, 0, 0, 1000 + i), 0);
  // 40 writes to the same word, values rising, then a big write with an
  // immediate: when its receive completes, the last value and all its data are there.
  for (uint64_t i = 0; i < 40; ++i) {
    src[i % 64] = i + 1;
    ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src[i % 64], 8, ms->lkey, reinterpret_cast<uint64_t>(&dst[0]), md->rkey, i), 0);
    if (i % 8 == 7) ASSERT_EQ(poll(8).size(), 8u);  // the send queue holds 64
  }
  std::vector<uint64_t> big(20000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = i * 3 + 1;
  ibv_mr* mb = reg(big.data(), big.size() * 8);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE_WITH_IMM, big.data(), 8 * 20000, mb->lkey, reinterpret_cast<uint64_t>(&dst[1]),
                 md->rkey, 77, 0x12345678),
            0);
  std::vector<ibv_wc> wc = poll(2);
  ASSERT_EQ(wc.size(), 2u);
  for (const ibv_wc& w : wc) {
    EXPECT_EQ(w.status, IBV_WC_SUCCESS);
    if (w.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
      EXPECT_EQ(w.imm_data, 0x12345678u);
      EXPECT_EQ(w.byte_len, 8u * 20000);
      EXPECT_EQ(w.wr_id, 1000u);
      EXPECT_EQ(dst[0], 40u);
      EXPECT_EQ(dst[20000], big[19999]);
    }
  }
  // An RDMA read brings it back.
  std::vector<uint64_t> back(20000, 0);
  ibv_mr* mk = reg(back.data(), back.size() * 8);
  ASSERT_EQ(post(b, IBV_WR_RDMA_READ, back.data(), 8 * 20000, mk->lkey, reinterpret_cast<uint64_t>(big.data()),
                 mb->rkey, 5),
            0);
  wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(back, big);
}

TEST_F(Provider, SendConsumesAReceive) {
  ibv_qp *a, *b;
  pair(&a, &b);
  char msg[] = "hello over loopback";
  char got[64] = {};
  ibv_mr* ms = reg(msg, sizeof msg);
  ibv_mr* mg = reg(got, sizeof got);
  ASSERT_EQ(postRecv(b, got, sizeof got, mg->lkey, 9), 0);
  ASSERT_EQ(post(a, IBV_WR_SEND, msg, sizeof msg, ms->lkey, 0, 0, 3), 0);
  std::vector<ibv_wc> wc = poll(2);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_STREQ(got, msg);
}

TEST_F(Provider, WrongRkeyIsARemoteAccessErrorAndFlushesTheRest) {
  ibv_qp *a, *b;
  pair(&a, &b);
  uint64_t src = 1, dst = 0;
  ibv_mr* ms = reg(&src, 8);
  ibv_mr* md = reg(&dst, 8, IBV_ACCESS_LOCAL_WRITE);  // no remote write
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src, 8, ms->lkey, reinterpret_cast<uint64_t>(&dst), md->rkey, 1), 0);
  std::vector<ibv_wc> wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(dst, 0u);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src, 8, ms->lkey, reinterpret_cast<uint64_t>(&dst), md->rkey, 2), 0);
  wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(Provider, DestroyedPeerIsRetryExceededWithinTheRetryTime) {
  ibv_qp *a, *b;
  pair(&a, &b);
  v->destroyQp(b);
  qps.pop_back();
  uint64_t src = 1;
  ibv_mr* ms = reg(&src, 8);
  const int64_t start = nowNs();
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src, 8, ms->lkey, 4096, 1, 1), 0);
  std::vector<ibv_wc> wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  // timeout 10 (4.2 ms) x 4 tries, plus scheduling.
  EXPECT_LT(nowNs() - start, int64_t(2000) * 1000000);
}

TEST_F(Provider, WrongDestinationLidIsUnreachable) {
  ibv_qp* a = newQp();
  ibv_qp* b = newQp();
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(toInit(a, access), 0);
  ASSERT_EQ(toInit(b, access), 0);
  ASSERT_EQ(toRtr(a, b->qp_num, 0, /*dlid=*/5), 0);
  ASSERT_EQ(toRtr(b, a->qp_num, 0), 0);
  ASSERT_EQ(toRts(a, 0), 0);
  uint64_t src = 1;
  ibv_mr* ms = reg(&src, 8);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src, 8, ms->lkey, 0, 0, 1), 0);
  std::vector<ibv_wc> wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
}

// Two P_Keys per port: an index past the table is refused, and QPs in
// different partitions cannot reach each other.
TEST_F(Provider, PkeyIndexIsCheckedAndPartitionsAreSeparate) {
  ibv_qp* a = newQp();
  ibv_qp* b = newQp();
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  ibv_qp_attr x{};
  x.qp_state = IBV_QPS_INIT;
  x.port_num = 1;
  x.qp_access_flags = access;
  x.pkey_index = 2;
  const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  EXPECT_EQ(v->modifyQp(a, &x, mask), EINVAL);
  x.pkey_index = 1;
  ASSERT_EQ(v->modifyQp(a, &x, mask), 0);
  ASSERT_EQ(toInit(b, access), 0);  // pkey index 0
  ASSERT_EQ(toRtr(a, b->qp_num, 0), 0);
  ASSERT_EQ(toRtr(b, a->qp_num, 0), 0);
  ASSERT_EQ(toRts(a, 0), 0);
  uint64_t src = 1, dst = 0;
  ibv_mr* ms = reg(&src, 8);
  ibv_mr* md = reg(&dst, 8);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src, 8, ms->lkey, reinterpret_cast<uint64_t>(&dst), md->rkey, 1), 0);
  std::vector<ibv_wc> wc = poll(1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(dst, 0u);
}

class ProviderQpFault : public Provider {
  const char* faults() const override { return "qp_error_after=1"; }
};

TEST_F(ProviderQpFault, QpFatalIsAnAsyncEvent) {
  ASSERT_NE(v->getAsyncEvent, nullptr);
  ibv_qp *a, *b;
  pair(&a, &b);
  uint64_t src = 1, dst = 0;
  ibv_mr* ms = reg(&src, 8);
  ibv_mr* md = reg(&dst, 8);
  ASSERT_EQ(post(a, IBV_WR_RDMA_WRITE, &src, 8, ms->lkey, reinterpret_cast<uint64_t>(&dst), md->rkey, 1), 0);
  pollfd p{ctx->async_fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  ibv_async_event ev{};
  ASSERT_EQ(v->getAsyncEvent(ctx, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.element.qp, a);
  v->ackAsyncEvent(&ev);
}

}  // namespace
}  // namespace weft::ib
