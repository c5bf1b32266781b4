// The loopback verbs provider's inner parts: the shared-memory "wire"
// between queue pairs, the process-local objects behind the verbs handles,
// and the test settings (devices, faults). See loopback_verbs.cc for the
// model and docs/ib.md for its use.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lbv {

// ---- the wire: one shared inbox per QP, filled only by its connected peer ----

constexpr uint32_t kChunk = 8192;  // payload bytes per message (a "packet")
constexpr uint32_t kRing = 16;     // messages per inbox
constexpr uint32_t kQpMagic = 0x4c425651;

enum MsgKind : uint32_t { kWrite = 1, kSend, kReadReq, kReadResp, kAck, kNak };
enum MsgFlags : uint32_t { kFirst = 1, kLast = 2, kImm = 4 };

struct Msg {
  uint32_t kind, flags;
  uint32_t psn;     // of the request this message belongs to
  uint32_t imm;     // network order, as posted
  uint64_t remoteAddr;
  uint32_t rkey;
  uint32_t len;     // payload bytes in this message
  uint64_t offset;  // of the payload within the request
  uint64_t total;   // request bytes
  uint32_t status;  // kNak: the ibv_wc_status the requester completes with
  uint32_t pad;
  uint8_t data[kChunk];
};

// What a peer may know of a QP: its address and state, and its inbox.
struct QpShared {
  uint32_t magic;
  uint32_t qpn;
  int32_t pid;
  std::atomic<uint32_t> state;      // ibv_qp_state
  std::atomic<uint32_t> destroyed;  // 1 once the owner destroyed it
  std::atomic<uint32_t> portDown;   // 1 while the owner's port is down
  std::atomic<uint32_t> remoteQpn;  // the QP it accepts requests from (set at RTR)
  std::atomic<uint32_t> psnRefused; // 1 once a request arrived with an unexpected PSN
  uint32_t linkLayer;               // IBV_LINK_LAYER_*
  uint16_t lid;
  uint16_t pkey;                    // partition key: QPs reach each other only in one partition (samePartition)
  uint8_t gids[2][16];              // the owner port's GID table
  std::atomic<uint64_t> head, tail; // produced / consumed messages
  Msg ring[kRing];
};

// ---- settings read from the environment (not WEFT_: this is a provider) ----

struct PortConf {
  int linkLayer = IBV_LINK_LAYER_INFINIBAND;
  bool down = false;  // DOWN from the start
  int subnet = 0;     // IB: 0 = the default subnet prefix fe80::, n: fec0:0:0:n:: (routed to the others)
  bool roceV1 = false;  // RoCE: GIDs of type RoCE v1 instead of v2
};

// Partition keys of every port (LOOPBACK_VERBS_PKEYS, hex, comma-separated;
// default ffff,8001: the default partition, then partition 1, both as a
// full member). Bit 15 is membership (1 full, 0 limited), the rest the
// partition: two QPs talk when the partitions agree and one is full.
inline bool samePartition(uint16_t a, uint16_t b) { return (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000); }

// What the QP attributes weft sets must be (LOOPBACK_VERBS_EXPECT); -1:
// anything valid. A mismatch makes ibv_modify_qp fail with EINVAL and says
// which attribute on stderr, so a test sees that a setting reached the QP.
struct Expect {
  int pkeyIndex = -1, grh = -1, hopLimit = -1, trafficClass = -1, sl = -1, timeout = -1, retryCnt = -1;
};
struct DevConf {
  std::string name;
  std::vector<PortConf> ports;
};

struct Faults {
  int wcStatus = -1;        // the wcAfter-th requester completion gets this status
  long wcAfter = -1;
  long qpErrorAfter = -1;   // after that many completions, their QP goes to ERROR (QP_FATAL event)
  long exitAfter = -1;      // after that many completions, the process vanishes (_exit)
  long portDownAfterMs = -1;
  int portDownPort = 1;     // of the first device
  long delayUs = 0;         // completions visible after a random delay up to this
  bool reorder = false;     // completions of different QPs returned in random order
  long cqCap = 0;           // > 0: every CQ holds at most this many entries (overrun)
  long maxCqe = 65536;      // the device's max_cqe: larger CQs (create, resize) are refused
  long wcQp = 0;            // > 0: wc_after counts only the completions of the wcQp-th QP the process created
  long retryMs = 1000;      // cap on the retry-exceeded time (real: 4.096us * 2^timeout * (retry+1))
  int forkStatus = IBV_FORK_DISABLED;  // what ibv_is_fork_initialized answers before ibv_fork_init
  uint64_t seed = 1;
};

// ---- process-local objects behind the handles ----

struct Context;

struct Mr {
  ibv_mr mr{};
  int access = 0;
  bool stale = false;  // the process forked without fork support: the HCA writes into pages it no longer sees
};

struct Cqe {
  ibv_wc wc{};
  uint64_t readyNs = 0;
};

struct Cq {
  ibv_cq cq{};
  std::mutex mu;
  std::deque<Cqe> q;
  size_t cap = 0;
  bool overflowed = false;
  std::map<uint32_t, uint64_t> lastReady;  // per QP: completions of a QP stay in order
};

struct SendWqe {
  ibv_send_wr wr{};
  std::vector<ibv_sge> sge;
  uint32_t psn = 0;
  uint64_t total = 0;
  uint64_t sentBytes = 0;  // transmitted so far
  uint64_t readBytes = 0;  // RDMA read: landed so far
  bool signaled = false;
};

struct RecvWqe {
  uint64_t wrId = 0;
  std::vector<ibv_sge> sge;
};

// A read request this QP answers.
struct ReadJob {
  uint32_t psn;
  uint64_t addr;
  uint64_t total;
  uint64_t sent = 0;
};

struct Qp {
  ibv_qp qp{};  // first: the handle is the object
  Context* ctx = nullptr;
  long index = 0;        // 1 for the process's first QP
  long completions = 0;  // requester completions counted (faults)
  Cq* sendCq = nullptr;
  Cq* recvCq = nullptr;
  ibv_qp_cap cap{};
  bool sigAll = false;
  std::mutex mu;
  int state = IBV_QPS_RESET;
  int port = 0;
  int access = 0;
  ibv_mtu mtu = IBV_MTU_1024;
  uint32_t destQpn = 0, rqPsn = 0, sqPsn = 0;
  int timeout = 0, retryCnt = 0, rnrRetry = 0;
  ibv_ah_attr ah{};
  std::deque<SendWqe> sq;        // posted, not all sent
  std::deque<SendWqe> inflight;  // sent, not acknowledged
  std::deque<RecvWqe> rq;
  std::deque<Msg> control;       // acks and naks to send (small: no payload used)
  std::deque<ReadJob> reads;
  // Inbox.
  std::string shmName;
  QpShared* self = nullptr;
  // Peer inbox.
  QpShared* peer = nullptr;
  uint32_t peerQpn = 0;
  // Responder: the next PSN it accepts, and a request being taken apart.
  uint32_t expectPsn = 0;
  bool dropping = false;  // rest of the current request refused (NAK sent)
  RecvWqe curRecv;
  bool haveRecv = false;
  uint64_t unreachableSinceNs = 0;
  uint64_t peerCheckedNs = 0;
  bool peerAlive = true;
  uint64_t rnrSinceNs = 0;
};

struct Context {
  ibv_context ctx{};  // first
  int devIndex = 0;
  int asyncPipe[2] = {-1, -1};
  std::mutex evMu;
  std::deque<ibv_async_event> events;
  void pushEvent(const ibv_async_event& e);
};

// The process's state: settings, registrations, queue pairs, progress thread.
struct Process {
  std::mutex mu;  // qps, mrs, contexts
  std::vector<DevConf> devs;
  std::string devSpec;  // the LOOPBACK_VERBS_DEVICES they were made from
  std::vector<ibv_device> ibdevs;
  std::vector<ibv_device*> devList;
  Faults faults;
  Expect expect;
  std::vector<uint16_t> pkeys;
  std::string fabric;
  std::map<uint32_t, Mr*> mrs;  // by key (lkey == rkey)
  uint32_t nextKey = 0x100;
  std::vector<Qp*> qps;
  long qpsCreated = 0;
  std::vector<Context*> contexts;
  std::atomic<long> completions{0};
  std::atomic<bool> portDown{false};
  uint64_t startNs = 0;
  std::atomic<uint32_t>* bell = nullptr;  // this process's doorbell (shared)
  std::map<int32_t, std::atomic<uint32_t>*> peerBells;
  std::thread progress;
  bool started = false;
  uint64_t rng = 1;
};

Process& proc();
uint64_t nowNs();
void loadSettings(Process& p);
// The LOOPBACK_VERBS_* texts loadSettings reads (null: unset). Every one
// is parsed whatever it holds; a port count outside 1..kMaxPorts is
// clamped to that range (ports are numbered by a uint8_t in verbs).
constexpr int kMaxPorts = 255;
std::vector<DevConf> parseDevices(const char* spec);
Faults parseFaults(const char* spec);
Expect parseExpect(const char* spec);
std::vector<uint16_t> parsePkeys(const char* spec);
// Maps (creating) a named shared segment of `bytes`; nullptr on failure.
void* mapShared(const std::string& name, size_t bytes, bool create);
// The shared doorbell of process `pid` in p's fabric (its segment name).
std::string bellName(const Process& p, int32_t pid);
std::atomic<uint32_t>* bellOf(Process& p, int32_t pid);
void ring(std::atomic<uint32_t>* bell);
void startProgress(Process& p);

// Completion helpers (progress and verbs calls; the caller holds qp->mu).
// GID `index` of a port: 0 link-local (IB: the port's subnet prefix), 1
// (RoCE) IPv4-mapped 10.0.dev.port.
void gidOf(int dev, int port, int index, uint8_t* out);
void pushCqe(Cq* cq, const ibv_wc& wc);
void moveToError(Qp* q, bool fatalEvent);
void completeSend(Qp* q, const SendWqe& w, ibv_wc_status status);
Mr* findMr(Process& p, uint32_t key, uint64_t addr, uint64_t len, int needAccess);

}  // namespace lbv
