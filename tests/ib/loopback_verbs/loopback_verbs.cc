// A loopback verbs provider for tests: libweft dlopens it through
// WEFT_IB_VERBS_LIB in place of libibverbs.so.1, and its IB transport then
// runs, unchanged, between ranks of one machine (threads of one process,
// or separate processes).
//
// The model. Each QP owns an inbox in shared memory (/dev/shm, one segment
// per QP, named after the fabric and the QP number); only the QP it is
// connected to (RC) writes into it. A posted request is queued; the
// process's progress thread cuts it into messages of 8 KiB (packets) and
// puts them into the peer's inbox. The peer's progress thread takes them
// in order: it checks the PSN, the rkey, the bounds and the access rights
// of the target registration, writes the data into its own memory (or,
// for a read, sends it back), consumes a posted receive for immediates and
// sends, and acknowledges; the requester completes a request only when its
// acknowledgement (or its last read response) arrives. So writes on one QP
// land in order, a write-with-immediate completes after its data, and no
// process ever touches another's memory. A peer that cannot be reached
// (gone, destroyed, not in RTR/RTS, connected to another QP, another LID or
// GID, its port down, a PSN it refused) fails the oldest request with
// IBV_WC_RETRY_EXC_ERR once that lasted the QP's retry time (capped by
// LOOPBACK_VERBS_RETRY_MS).
//
// Settings (environment, read at each ibv_get_device_list):
//   LOOPBACK_VERBS_FABRIC   name prefix of the shared segments (default lbv-<uid>)
//   LOOPBACK_VERBS_DEVICES  devices and ports: "lbv0:2:IB,lbv1:1:RoCE" (default lbv0:1:IB);
//                           a port spelled "IB-down" / "RoCE-down" is DOWN from the start
//   LOOPBACK_VERBS_FAULTS   comma-separated faults, see loadSettings (lbv_settings.cc)
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lbv_internal.h"

// verbs.h turns these names into macros (compat wrappers); the provider
// exports the plain symbols, as libibverbs does.
#undef ibv_query_port
#undef ibv_reg_mr

using namespace lbv;

namespace {

Context* ctxOf(ibv_context* c) { return reinterpret_cast<Context*>(c); }
Qp* qpOf(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
Cq* cqOf(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }

int portCount(const Context* c) { return static_cast<int>(proc().devs[c->devIndex].ports.size()); }

uint16_t lidOf(int dev, int port) { return static_cast<uint16_t>(dev * 16 + port + 1); }

bool portIsDown(const Context* c, int port) {
  Process& p = proc();
  const PortConf& pc = p.devs[c->devIndex].ports[port - 1];
  if (pc.down) return true;
  return p.portDown.load() && c->devIndex == 0 && port == p.faults.portDownPort;
}

int pollCq(ibv_cq* cqh, int n, ibv_wc* wc);
int postSend(ibv_qp* qph, ibv_send_wr* wr, ibv_send_wr** bad);
int postRecv(ibv_qp* qph, ibv_recv_wr* wr, ibv_recv_wr** bad);
int reqNotify(ibv_cq*, int) { return 0; }

}  // namespace

std::atomic<int> g_liveCqs{0};

extern "C" {

ibv_device** ibv_get_device_list(int* num) {
  Process& p = proc();
  std::lock_guard<std::mutex> lock(p.mu);
  loadSettings(p);
  if (num) *num = static_cast<int>(p.devs.size());
  auto** list = new ibv_device*[p.devList.size() + 1];
  for (size_t i = 0; i < p.devList.size(); ++i) list[i] = p.devList[i];
  list[p.devList.size()] = nullptr;
  return list;
}

void ibv_free_device_list(ibv_device** list) { delete[] list; }

const char* ibv_get_device_name(ibv_device* dev) { return dev ? dev->name : nullptr; }

ibv_context* ibv_open_device(ibv_device* dev) {
  Process& p = proc();
  std::lock_guard<std::mutex> lock(p.mu);
  int index = -1;
  for (size_t i = 0; i < p.devList.size(); ++i)
    if (p.devList[i] == dev) index = static_cast<int>(i);
  if (index < 0) {
    errno = ENODEV;
    return nullptr;
  }
  auto* c = new Context;
  c->devIndex = index;
  c->ctx.device = dev;
  c->ctx.cmd_fd = -1;
  c->ctx.num_comp_vectors = 1;
  c->ctx.ops.poll_cq = pollCq;
  c->ctx.ops.post_send = postSend;
  c->ctx.ops.post_recv = postRecv;
  c->ctx.ops.req_notify_cq = reqNotify;
  pthread_mutex_init(&c->ctx.mutex, nullptr);
  if (pipe2(c->asyncPipe, O_CLOEXEC) != 0) {
    delete c;
    return nullptr;
  }
  c->ctx.async_fd = c->asyncPipe[0];
  p.contexts.push_back(c);
  startProgress(p);
  return &c->ctx;
}

int ibv_close_device(ibv_context* ch) {
  Process& p = proc();
  Context* c = ctxOf(ch);
  {
    std::lock_guard<std::mutex> lock(p.mu);
    for (size_t i = 0; i < p.contexts.size(); ++i)
      if (p.contexts[i] == c) p.contexts.erase(p.contexts.begin() + static_cast<long>(i));
  }
  close(c->asyncPipe[0]);
  close(c->asyncPipe[1]);
  delete c;
  return 0;
}

int ibv_query_device(ibv_context* ch, ibv_device_attr* a) {
  if (!ch || !a) return EINVAL;
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "loopback");
  a->max_mr_size = uint64_t(1) << 40;
  a->max_qp = 4096;
  a->max_qp_wr = 16384;
  a->max_sge = 4;
  a->max_cq = 4096;
  a->max_cqe = static_cast<int>(proc().faults.maxCqe);
  a->max_mr = 65536;
  a->max_pd = 1024;
  a->max_qp_rd_atom = 16;
  a->max_qp_init_rd_atom = 16;
  a->phys_port_cnt = static_cast<uint8_t>(portCount(ctxOf(ch)));
  return 0;
}

int ibv_query_port(ibv_context* ch, uint8_t port, _compat_ibv_port_attr* compat) {
  auto* a = reinterpret_cast<ibv_port_attr*>(compat);
  if (!ch || !a) return EINVAL;
  Context* c = ctxOf(ch);
  if (port < 1 || port > portCount(c)) return EINVAL;
  const PortConf& pc = proc().devs[c->devIndex].ports[port - 1];
  // Fill only the fields of the older (compat) layout, as libibverbs'
  // exported symbol does: callers must not depend on the newer tail.
  std::memset(a, 0, offsetof(ibv_port_attr, flags) + 1);
  a->state = portIsDown(c, port) ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = pc.linkLayer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
  a->max_msg_sz = 1u << 31;
  a->pkey_tbl_len = static_cast<uint16_t>(proc().pkeys.size());
  a->lid = pc.linkLayer == IBV_LINK_LAYER_ETHERNET ? 0 : lidOf(c->devIndex, port);
  a->active_width = 2;   // 4x
  a->active_speed = 32;  // EDR
  a->phys_state = a->state == IBV_PORT_ACTIVE ? 5 : 3;
  a->link_layer = static_cast<uint8_t>(pc.linkLayer);
  return 0;
}

int ibv_query_pkey(ibv_context* ch, uint8_t port, int index, __be16* pkey) {
  if (!ch || !pkey) return EINVAL;
  Context* c = ctxOf(ch);
  if (port < 1 || port > portCount(c)) return EINVAL;
  if (index < 0 || index >= static_cast<int>(proc().pkeys.size())) return EINVAL;
  *pkey = htons(proc().pkeys[static_cast<size_t>(index)]);
  return 0;
}

int ibv_query_gid(ibv_context* ch, uint8_t port, int index, ibv_gid* gid) {
  if (!ch || !gid) return EINVAL;
  Context* c = ctxOf(ch);
  if (port < 1 || port > portCount(c)) return -1;
  bool roce = proc().devs[c->devIndex].ports[port - 1].linkLayer == IBV_LINK_LAYER_ETHERNET;
  if (index < 0 || index >= (roce ? 2 : 1)) return -1;
  gidOf(c->devIndex, port, index, gid->raw);
  return 0;
}

// RoCE GIDs are v2 (as on current NICs) unless the port is RoCEv1, IB ones type IB.
int _ibv_query_gid_ex(ibv_context* ch, uint32_t port, uint32_t index, ibv_gid_entry* e, uint32_t flags, size_t size) {
  if (!ch || !e || flags || size < sizeof(ibv_gid_entry)) return EINVAL;
  Context* c = ctxOf(ch);
  if (port < 1 || port > static_cast<uint32_t>(portCount(c))) return EINVAL;
  bool roce = proc().devs[c->devIndex].ports[port - 1].linkLayer == IBV_LINK_LAYER_ETHERNET;
  if (index >= (roce ? 2u : 1u)) return ENODATA;
  std::memset(e, 0, sizeof *e);
  gidOf(c->devIndex, static_cast<int>(port), static_cast<int>(index), e->gid.raw);
  e->gid_index = index;
  e->port_num = port;
  const bool v1 = roce && proc().devs[c->devIndex].ports[port - 1].roceV1;
  e->gid_type = !roce ? IBV_GID_TYPE_IB : v1 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  return 0;
}

ibv_pd* ibv_alloc_pd(ibv_context* ch) {
  auto* pd = new ibv_pd{};
  pd->context = ch;
  return pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  delete pd;
  return 0;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  // As libibverbs: remote write (and atomics) need local write.
  if (!pd || ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))) {
    errno = EINVAL;
    return nullptr;
  }
  if (!addr && length) {
    errno = EFAULT;
    return nullptr;
  }
  Process& p = proc();
  std::lock_guard<std::mutex> lock(p.mu);
  auto* m = new Mr;
  m->access = access;
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->mr.lkey = m->mr.rkey = p.nextKey++;
  p.mrs[m->mr.lkey] = m;
  return &m->mr;
}

int ibv_dereg_mr(ibv_mr* mr) {
  Process& p = proc();
  std::lock_guard<std::mutex> lock(p.mu);
  auto it = p.mrs.find(mr->lkey);
  if (it == p.mrs.end()) return EINVAL;
  delete it->second;
  p.mrs.erase(it);
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* ch, int cqe, void* cqContext, ibv_comp_channel* channel, int) {
  if (!ch || cqe < 1 || cqe > proc().faults.maxCqe) {
    errno = EINVAL;
    return nullptr;
  }
  auto* c = new Cq;
  c->cq.context = ch;
  c->cq.channel = channel;
  c->cq.cq_context = cqContext;
  c->cq.cqe = cqe;
  c->cap = static_cast<size_t>(cqe);
  if (proc().faults.cqCap > 0 && proc().faults.cqCap < cqe) c->cap = static_cast<size_t>(proc().faults.cqCap);
  g_liveCqs.fetch_add(1);
  return &c->cq;
}

// For tests (dlsym): how many CQs the process holds.
int loopback_verbs_live_cqs(void) { return g_liveCqs.load(); }

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  Cq* c = cqOf(cq);
  std::lock_guard<std::mutex> lock(c->mu);
  if (cqe < 1 || cqe > proc().faults.maxCqe || static_cast<size_t>(cqe) < c->q.size()) return EINVAL;
  c->cq.cqe = cqe;
  c->cap = static_cast<size_t>(cqe);
  if (proc().faults.cqCap > 0 && proc().faults.cqCap < cqe) c->cap = static_cast<size_t>(proc().faults.cqCap);
  return 0;
}

int ibv_destroy_cq(ibv_cq* cq) {
  Process& p = proc();
  std::lock_guard<std::mutex> lock(p.mu);
  for (Qp* q : p.qps)
    if (q->sendCq == cqOf(cq) || q->recvCq == cqOf(cq)) return EBUSY;
  delete cqOf(cq);
  g_liveCqs.fetch_sub(1);
  return 0;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (!pd || !init || !init->send_cq || !init->recv_cq || init->qp_type != IBV_QPT_RC || init->srq ||
      init->cap.max_send_wr < 1 || init->cap.max_send_wr > 16384 || init->cap.max_recv_wr > 16384 ||
      init->cap.max_send_sge > 4 || init->cap.max_recv_sge > 4) {
    errno = EINVAL;
    return nullptr;
  }
  Process& p = proc();
  auto* q = new Qp;
  q->ctx = ctxOf(pd->context);
  q->sendCq = cqOf(init->send_cq);
  q->recvCq = cqOf(init->recv_cq);
  q->cap = init->cap;
  q->sigAll = init->sq_sig_all != 0;
  q->qp.context = pd->context;
  q->qp.qp_context = init->qp_context;
  q->qp.pd = pd;
  q->qp.send_cq = init->send_cq;
  q->qp.recv_cq = init->recv_cq;
  q->qp.qp_type = IBV_QPT_RC;
  q->qp.state = IBV_QPS_RESET;
  // QP numbers come from the fabric's counter, so that they are unique
  // across the processes that share it.
  auto* counter = static_cast<std::atomic<uint32_t>*>(mapShared(p.fabric + "-qpn", 4096, true));
  if (!counter) {
    delete q;
    errno = ENOMEM;
    return nullptr;
  }
  q->qp.qp_num = (counter->fetch_add(1) % 0xfffff0) + 8;
  q->shmName = p.fabric + "-q" + std::to_string(q->qp.qp_num);
  q->self = static_cast<QpShared*>(mapShared(q->shmName, sizeof(QpShared), true));
  if (!q->self) {
    delete q;
    errno = ENOMEM;
    return nullptr;
  }
  q->self->qpn = q->qp.qp_num;
  q->self->pid = getpid();
  q->self->state.store(IBV_QPS_RESET);
  q->self->magic = kQpMagic;
  std::lock_guard<std::mutex> lock(p.mu);
  q->index = ++p.qpsCreated;
  p.qps.push_back(q);
  return &q->qp;
}

int ibv_destroy_qp(ibv_qp* qph) {
  Process& p = proc();
  Qp* q = qpOf(qph);
  {
    std::lock_guard<std::mutex> lock(p.mu);  // the progress thread holds it while it works
    for (size_t i = 0; i < p.qps.size(); ++i)
      if (p.qps[i] == q) p.qps.erase(p.qps.begin() + static_cast<long>(i));
  }
  q->self->destroyed.store(1);
  shm_unlink(("/" + q->shmName).c_str());
  munmap(q->self, sizeof(QpShared));
  if (q->peer) munmap(q->peer, sizeof(QpShared));
  delete q;
  return 0;
}

const char* ibv_wc_status_str(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_LEN_ERR: return "local length error";
    case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    case IBV_WC_FATAL_ERR: return "fatal error";
    case IBV_WC_GENERAL_ERR: return "general error";
    default: return "unknown";
  }
}

const char* ibv_port_state_str(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP: return "PORT_NOP";
    case IBV_PORT_DOWN: return "PORT_DOWN";
    case IBV_PORT_INIT: return "PORT_INIT";
    case IBV_PORT_ARMED: return "PORT_ARMED";
    case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
    default: return "invalid state";
  }
}

// Async events: a pipe per context carries one byte per queued event, so
// that a caller can poll() async_fd and make it non-blocking as with the
// real library.
int ibv_get_async_event(ibv_context* ch, ibv_async_event* ev) {
  Context* c = ctxOf(ch);
  char b;
  ssize_t n = read(c->asyncPipe[0], &b, 1);
  if (n != 1) return -1;
  std::lock_guard<std::mutex> lock(c->evMu);
  if (c->events.empty()) return -1;
  *ev = c->events.front();
  c->events.pop_front();
  return 0;
}

void ibv_ack_async_event(ibv_async_event*) {}

const char* ibv_event_type_str(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_QP_FATAL: return "local work queue catastrophic error";
    case IBV_EVENT_CQ_ERR: return "CQ error";
    case IBV_EVENT_PORT_ACTIVE: return "port active";
    case IBV_EVENT_PORT_ERR: return "port error";
    case IBV_EVENT_DEVICE_FATAL: return "local catastrophic error";
    default: return "unknown";
  }
}

// Fork support: see Faults::forkStatus. Without it, a fork after
// registration leaves the parent's registered pages copy-on-write: the HCA
// keeps writing the pages the child got (modelled by Mr::stale).
static int g_forkInit = 0;
namespace lbv {
bool forkUnneeded();
}
int ibv_fork_init(void) {
  g_forkInit = 1;
  return 0;
}
ibv_fork_status ibv_is_fork_initialized(void) {
  if (g_forkInit) return IBV_FORK_ENABLED;
  return forkUnneeded() ? IBV_FORK_UNNEEDED : IBV_FORK_DISABLED;
}

// For the provider's own tests: how many registrations are live.
int lbv_live_mrs(void) {
  std::lock_guard<std::mutex> lock(proc().mu);
  return static_cast<int>(proc().mrs.size());
}

}  // extern "C"

namespace lbv {

void gidOf(int dev, int port, int index, uint8_t* out) {
  std::memset(out, 0, 16);
  const PortConf& pc = proc().devs[dev].ports[port - 1];
  if (index == 0) {  // link-local, or on IB the port's subnet prefix
    out[0] = 0xfe;
    out[1] = pc.subnet ? 0xc0 : 0x80;
    out[7] = static_cast<uint8_t>(pc.subnet);
    out[14] = static_cast<uint8_t>(dev);
    out[15] = static_cast<uint8_t>(port);
  } else {  // IPv4-mapped 10.0.dev.port
    out[10] = out[11] = 0xff;
    out[12] = 10;
    out[14] = static_cast<uint8_t>(dev);
    out[15] = static_cast<uint8_t>(port);
  }
}


void Context::pushEvent(const ibv_async_event& e) {
  {
    std::lock_guard<std::mutex> lock(evMu);
    events.push_back(e);
  }
  char b = 1;
  (void)!write(asyncPipe[1], &b, 1);
}

// Read here rather than from Faults: it is asked before the first
// ibv_get_device_list.
bool forkUnneeded() {
  const char* f = std::getenv("LOOPBACK_VERBS_FAULTS");
  return f && std::strstr(f, "fork=unneeded");
}

bool forkBroken() { return !g_forkInit && !forkUnneeded(); }

}  // namespace lbv

namespace {

int pollCq(ibv_cq* cqh, int n, ibv_wc* wc) {
  Cq* c = cqOf(cqh);
  Process& p = proc();
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->overflowed) {
    errno = EIO;
    return -1;
  }
  const uint64_t now = nowNs();
  int got = 0;
  while (got < n) {
    // Candidates: the oldest entry of each QP that is ready.
    std::vector<size_t> cand;
    std::vector<uint32_t> seen;
    for (size_t i = 0; i < c->q.size(); ++i) {
      uint32_t qpn = c->q[i].wc.qp_num;
      bool first = true;
      for (uint32_t s : seen) first = first && s != qpn;
      if (!first) continue;
      seen.push_back(qpn);
      if (c->q[i].readyNs <= now) cand.push_back(i);
      if (!p.faults.reorder && !cand.empty()) break;
    }
    if (cand.empty()) break;
    size_t pick = cand[0];
    if (p.faults.reorder) {
      p.rng = p.rng * 6364136223846793005ULL + 1442695040888963407ULL;
      pick = cand[(p.rng >> 33) % cand.size()];
    }
    wc[got++] = c->q[pick].wc;
    c->q.erase(c->q.begin() + static_cast<long>(pick));
  }
  return got;
}

int postSend(ibv_qp* qph, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* q = qpOf(qph);
  std::lock_guard<std::mutex> lock(q->mu);
  for (; wr; wr = wr->next) {
    int err = 0;
    if (q->state != IBV_QPS_RTS && q->state != IBV_QPS_ERR && q->state != IBV_QPS_SQD) err = EINVAL;
    else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_send_sge) err = EINVAL;
    else if (q->sq.size() + q->inflight.size() >= q->cap.max_send_wr) err = ENOMEM;
    else if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_SEND &&
             wr->opcode != IBV_WR_SEND_WITH_IMM && wr->opcode != IBV_WR_RDMA_READ)
      err = EINVAL;
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    SendWqe w;
    w.wr = *wr;
    w.wr.next = nullptr;
    w.sge.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    w.wr.sg_list = nullptr;
    for (const ibv_sge& s : w.sge) w.total += s.length;
    w.signaled = q->sigAll || (wr->send_flags & IBV_SEND_SIGNALED);
    w.psn = q->sqPsn;
    q->sqPsn = (q->sqPsn + 1) & 0xffffff;
    if (q->state == IBV_QPS_ERR) {
      completeSend(q, w, IBV_WC_WR_FLUSH_ERR);
      continue;
    }
    q->sq.push_back(std::move(w));
  }
  ring(proc().bell);
  return 0;
}

int postRecv(ibv_qp* qph, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* q = qpOf(qph);
  std::lock_guard<std::mutex> lock(q->mu);
  for (; wr; wr = wr->next) {
    int err = 0;
    if (q->state == IBV_QPS_RESET) err = EINVAL;
    else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_recv_sge) err = EINVAL;
    else if (q->rq.size() + (q->haveRecv ? 1 : 0) >= q->cap.max_recv_wr) err = ENOMEM;
    if (err) {
      if (bad) *bad = wr;
      return err;
    }
    RecvWqe r;
    r.wrId = wr->wr_id;
    r.sge.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    if (q->state == IBV_QPS_ERR) {
      ibv_wc wc{};
      wc.wr_id = r.wrId;
      wc.status = IBV_WC_WR_FLUSH_ERR;
      wc.opcode = IBV_WC_RECV;
      wc.qp_num = q->qp.qp_num;
      pushCqe(q->recvCq, wc);
      continue;
    }
    q->rq.push_back(std::move(r));
  }
  ring(proc().bell);
  return 0;
}

}  // namespace
