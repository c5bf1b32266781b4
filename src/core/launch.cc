#include "src/core/launch.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "algorithms/collectives.h"
#include "algorithms/direct.h"
#include "algorithms/one_shot.h"
#include "algorithms/p2p.h"
#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/core/alltoall_batches.h"
#include "src/core/call_check.h"
#include "src/core/comm.h"
#include "src/core/connections.h"
#include "src/core/device_channels.h"
#include "src/core/diagnose.h"
#include "src/core/group.h"
#include "src/core/direct_comm.h"
#include "src/core/ll_comm.h"
#include "src/core/plan_cache.h"
#include "src/core/trace.h"
#include "src/exec/cuda/device_layout.h"
#include "src/exec/cuda/device_route.h"
#include "src/exec/host/host_executor.h"
#include "src/util/clock.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft {
namespace {

HostExecContext execContext(weftComm_t comm) {
  HostExecContext ctx;
  ctx.bell = comm->bell;
  ctx.abortFlag = &comm->aborting;
  ctx.asyncError = [comm] { return comm->getAsyncError(); };
  ctx.timeoutMs = comm->timeoutMs;
  ctx.busyPoll = comm->busyPoll;
  ctx.rank = comm->rank;
  if (comm->trace) {
    ctx.trace = comm->trace->buffer();
    ctx.traceComm = comm->trace->slot();
  }
  ctx.state = &comm->callState;
  ctx.explainTimeout = [comm] { return explainTimeout(comm); };
  return ctx;
}

// Whether op's output is large enough to bypass the caches on its way out
// (HostExecContext::streamStores): host buffers only.
bool streamsOutput(weftComm_t comm, const OpDesc& op) {
  return comm->streamMinBytes > 0 && !op.device && recvBytesOf(op, comm->nranks) >= comm->streamMinBytes;
}

// Keeps the communicator's CallState true for the diagnosis: which
// operation this rank is in, and how it ended.
class CallScope {
 public:
  CallScope(weftComm_t comm, plan::Coll coll, uint64_t count)
      : state_(comm->callState), uncaught_(std::uncaught_exceptions()) {
    state_.begin(static_cast<int32_t>(coll), count, coll != plan::Coll::SendRecv);
  }
  ~CallScope() {
    state_.end(std::uncaught_exceptions() > uncaught_ ? CallPhase::Failed
               : launched_                             ? CallPhase::Launched
                                                       : CallPhase::Done);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  // Device buffers: the work is queued, not done.
  void launched() { launched_ = true; }

 private:
  CallState& state_;
  const int uncaught_;
  bool launched_ = false;
};

void runConnected(weftComm_t comm, const plan::Plan& p, std::span<const BufferBinding> bindings,
                  const kernels::RedOp& op, bool streamStores = false) {
  if (p.scratchElems) {
    size_t bytes = p.scratchElems * p.elemSize;
    if (comm->scratch.size() < bytes) comm->scratch.resize(bytes);
  }
  FifoLookup fifos;
  Connections* conns = comm->connections.get();
  fifos.send = [conns](int peer, int conn) { return conns->send(peer, conn); };
  fifos.recv = [conns](int peer, int conn) { return conns->recv(peer, conn); };
  HostExecContext ctx = execContext(comm);
  ctx.streamStores = streamStores;
  runHostPlan(p, bindings, comm->scratch.data(), op, fifos, ctx);
}

// A host AllToAll keeps at most WEFT_ALLTOALL_MAX_PEERS peers connected
// (0: every peer, for good), running in batches past it
// (src/core/alltoall_batches.h).
void execute(weftComm_t comm, const plan::Plan& p, std::span<const BufferBinding> bindings,
             const kernels::RedOp& op, bool streamStores = false) {
  if (p.coll == plan::Coll::AllToAll && p.channels.size() == 2 * size_t(p.nranks - 1) + 1) {
    const int64_t maxPeers = comm->config.get(settings::kAllToAllMaxPeers);
    if (maxPeers > 0) {
      runAllToAllBounded(comm, p, static_cast<size_t>(maxPeers),
                         [&](const plan::Plan& part) { runConnected(comm, part, bindings, op); });
      return;
    }
  }
  comm->connections->ensure(p);
  runConnected(comm, p, bindings, op, streamStores);
}

// Device kernels run after the call returns, so their connections cannot
// be closed batch by batch as a host AllToAll's are: a device call whose
// plan joins more than WEFT_ALLTOALL_MAX_PEERS peers in one direction is
// refused, before anything connects. Every rank of an AllToAll decides
// alike; for a group each rank decides from its own calls (the peers of a
// refused group then time out waiting for it).
void refuseDevicePeersPastBound(weftComm_t comm, const plan::Plan& p) {
  const int64_t maxPeers = comm->config.get(settings::kAllToAllMaxPeers);
  if (maxPeers <= 0 || p.nranks - 1 <= maxPeers) return;
  std::vector<char> to(p.nranks, 0), from(p.nranks, 0);
  int64_t nTo = 0, nFrom = 0;
  for (const auto& ch : p.channels)
    for (const auto& st : ch.steps) {
      for (int i = 0; i < st.nSend; i++) nTo += !std::exchange(to[st.sendPeer[i]], 1);
      for (int i = 0; i < st.nRecv; i++) nFrom += !std::exchange(from[st.recvPeer[i]], 1);
    }
  if (nTo <= maxPeers && nFrom <= maxPeers) return;
  raise(weftInvalidUsage,
        "rank %d: a device %s sends to %ld and receives from %ld peers, past WEFT_ALLTOALL_MAX_PEERS=%ld (device "
        "calls keep every connection they make; host buffers run in batches): raise it (0: no bound) or split the "
        "call",
        comm->rank, plan::collName(p.coll), static_cast<long>(nTo), static_cast<long>(nFrom),
        static_cast<long>(maxPeers));
}

uint64_t busBytes(const OpDesc& op, int nranks) {
  return plan::largestBufferElems(op.coll, op.count, nranks) * kernels::typeSize(op.type);
}

void logChoice(const OpDesc& op, const algo::CostInputs& in, const algo::CallChoice& choice) {
  std::string all;
  for (int i = 0; i < algo::algoCount(); i++) {
    double t = algo::estimateUs(op.coll, algo::AlgoId(i), in);
    if (t < 1e300) all += std::string(" ") + algo::algoName(algo::AlgoId(i)) + " " + std::to_string(t) + "us";
  }
  WEFT_INFO(kTune, "%s %lu bytes: %s, %s, %d channel(s), %lu B slices (estimates:%s)", plan::collName(op.coll),
            static_cast<unsigned long>(in.bytes), algo::algoName(choice.algo), algo::protoName(choice.proto),
            choice.shape.nChannels, static_cast<unsigned long>(choice.shape.sliceBytes), all.c_str());
}

algo::CallChoice chooseAlgo(weftComm_t comm, const OpDesc& op) {
  if (plan::collInfo(op.coll).fixedPlan) {  // a point-to-point plan, no choice
    algo::CallChoice fixed;
    fixed.shape = {comm->nChannels, comm->geometry.slotBytes, 0};
    return fixed;
  }
  algo::CostInputs in = comm->costBase;
  in.bytes = busBytes(op, comm->nranks);
  in.deviceBuffers = op.device;
  algo::CallChoice choice =
      op.device ? algo::selectCall(op.coll, in, comm->deviceAlgoFilter, comm->geometry, comm->deviceProtoFilter)
                : algo::selectCall(op.coll, in, comm->algoFilter, comm->geometry, comm->protoFilter);
  if (comm->sliceOverride) choice.shape.sliceBytes = comm->sliceOverride;
  // Device calls: channels from the GPU link and the call's size (one CTA
  // each), not from the host cost model.
  if (op.device) choice.shape.nChannels = deviceCallChannels(in.bytes, comm->nranks, comm->deviceChannels);
  if (comm->channelsOverride) choice.shape.nChannels = comm->channelsOverride;
  if (logEnabled(LogLevel::Info, kTune)) logChoice(op, in, choice);
  return choice;
}

// AllToAll's plan is fixed (collInfo().fixedPlan); grouped Send/Recv never
// come here (runPointToPoint). Every other collective runs the chosen
// algorithm's builder.
plan::Plan buildPlan(algo::AlgoId which, const algo::CollArgs& a) {
  if (plan::collInfo(a.coll).fixedPlan) return algo::buildAllToAll(a);
  return algo::algoInfo(which).build(a);
}

// Device LL pieces travel on FIFOs of their own (connection index +
// kLlConnBase): a FIFO that carried simple pieces holds bytes that could
// read as LL flags. Step::conn is 8 bits, so plans of up to 128 connection
// indices (device calls use at most 64 channels) can move.
constexpr int kLlConnBase = 128;
void useLlConnections(plan::Plan& p) {
  p.deviceLl = true;
  for (auto& ch : p.channels)
    for (auto& st : ch.steps) {
      if (!st.nRecv && !st.nSend) continue;
      if (st.conn >= kLlConnBase) raise(weftInternalError, "device ll: connection index %d past %d", st.conn, kLlConnBase);
      st.conn = static_cast<uint8_t>(st.conn + kLlConnBase);
    }
}

// Whether a device call runs LL. A slot then carries half its bytes of
// data, so the plan is cut for pieces that fit; past 64 channels (a double
// tree's connection indices + kLlConnBase must fit 8 bits) it runs simple.
bool useDeviceLl(const OpDesc& op, algo::CallChoice& choice, algo::CollArgs& a, const plan::FifoGeometry& g) {
  if (!op.device || choice.proto != algo::kLowLatency) return false;
  if (a.nChannels * 2 > kLlConnBase) {
    choice.proto = algo::kSimple;
    return false;
  }
  a.geometry.slotBytes = std::min<uint64_t>(a.geometry.slotBytes, g.slotBytes / 2);
  return true;
}

// What every plan builder is told about a call, whichever algorithm runs it.
algo::CollArgs callArgs(weftComm_t comm, const OpDesc& op) {
  algo::CollArgs a;
  a.coll = op.coll;
  a.nranks = comm->nranks;
  a.rank = comm->rank;
  a.count = op.count;
  a.elemSize = static_cast<uint32_t>(kernels::typeSize(op.type));
  a.root = op.root;
  // Device plans split buffers on the kernel's vector size, so an aligned
  // buffer's blocks stay aligned; host plans split anywhere, as before.
  if (op.device) a.alignBytes = cuda::kDeviceSplitAlignBytes;
  return a;
}

// Registered buffers on one host: single-copy when every rank's are (a
// handshake every rank takes part in; src/core/direct_comm.h). Then the
// direct plan, run by the host executor with the peers' buffers; the
// buffers stay pinned (not deregistrable) until it ends.
bool runDirectIfAgreed(weftComm_t comm, const OpDesc& op, TracedCall* traced) {
  PinnedBuffers pins(*comm->registrations, op.send, sendBytesOf(op, comm->nranks), op.recv,
                     recvBytesOf(op, comm->nranks));
  struct EndCall {
    DirectComm& d;
    ~EndCall() { d.endCall(); }
  } endCall{*comm->direct};
  if (!comm->direct->agree(op, pins)) return false;
  algo::CollArgs a = callArgs(comm, op);
  a.geometry = comm->geometry;
  PlanKey key = planKey(a, algo::kRing, algo::kSimple);
  key.direct = true;
  std::shared_ptr<const plan::Plan> p = comm->plans->get(key, [&] { return algo::buildDirect(a); });
  WEFT_INFO(kColl, "%s count %zu type %s op %d: %s, 1 channel(s), %zu steps", plan::collName(op.coll), op.count,
            kernels::typeName(op.type), static_cast<int>(op.op.kind), algo::kDirectName, p->stepCount());
  HostExecContext ctx = execContext(comm);
  ctx.direct = comm->direct.get();
  ctx.streamStores = streamsOutput(comm, op);
  BufferBinding b{op.send, op.recv};
  runHostPlan(*p, {&b, 1}, nullptr, op.op, FifoLookup{}, ctx);
  *traced = {algo::kDirectName, algo::kDirectName, 1, p->stepCount()};
  return true;
}

// Returns what it chose, for the call's trace event.
TracedCall runCollective(weftComm_t comm, const OpDesc& op) {
  CallScope scope(comm, op.coll, op.count);
  if (comm->checkCalls) checkCallAcrossRanks(comm, op);
  // Small calls on one host: no selection, plan or executor (src/core/ll_comm.h).
  static const TracedCall kLlCall{algo::kOneShotName, "ll", 1, 1};
  if (runLowLatencyIfChosen(comm, op)) return kLlCall;
  if (comm->direct && comm->direct->candidate(op)) {
    TracedCall direct;
    if (runDirectIfAgreed(comm, op, &direct)) return direct;
  }
  algo::CollArgs a = callArgs(comm, op);
  algo::CallChoice choice = chooseAlgo(comm, op);
  // A narrow wire format is a property of the ring's steps (plan::Wire); the
  // plan is cut into pieces of wire-sized elements, so its chunks fill the
  // FIFO slots as a ring of that element size would.
  if (op.wire != plan::Wire::Native) {
    choice.algo = algo::kRing;
    choice.proto = algo::kSimple;
    a.elemSize = plan::wireElemSize(op.wire, a.elemSize);
  } else if (choice.proto == algo::kLowLatency && !op.device) {  // a size past the fast path's limit
    runLowLatency(comm, op);
    return kLlCall;
  }
  const algo::AlgoId which = choice.algo;
  a.nChannels = choice.shape.nChannels;
  a.geometry = comm->geometry;
  a.geometry.slotBytes = choice.shape.sliceBytes;
  const bool deviceLl = useDeviceLl(op, choice, a, comm->geometry);
  // Topology-ordered rings (host-contiguous), one per channel so channels
  // spread over the NICs; the double tree and hier follow each channel's order too. The plan cache needs
  // no key for them because a communicator's orders never change. They are
  // copied only when a plan is built, not on every call, as are the hosts.
  PlanKey key = planKey(a, which, choice.proto);
  key.wire = op.wire;
  std::shared_ptr<const plan::Plan> p = comm->plans->get(key, [&] {
    algo::CollArgs ordered = a;
    if (!comm->ringOrders.empty()) {
      ordered.order = comm->ringOrders[0];
      ordered.channelOrders = comm->ringOrders;
    }
    ordered.hostOf = comm->hostOf;
    plan::Plan built = buildPlan(which, ordered);
    if (deviceLl) useLlConnections(built);
    if (op.wire != plan::Wire::Native) {
      built.wire = op.wire;
      built.elemSize = static_cast<uint32_t>(kernels::typeSize(op.type));
    }
    return built;
  });
  WEFT_INFO(kColl, "%s count %zu type %s op %d root %d: %s, %s, %d channel(s), %zu steps", plan::collName(op.coll),
            op.count, kernels::typeName(op.type), static_cast<int>(op.op.kind), op.root,
            plan::collInfo(op.coll).fixedPlan ? "p2p" : algo::algoName(which), algo::protoName(choice.proto),
            a.nChannels, p->stepCount());
  const TracedCall traced{plan::collInfo(op.coll).fixedPlan ? "p2p" : algo::algoName(which),
                          algo::protoName(choice.proto), a.nChannels, p->stepCount()};
  BufferBinding b{op.send, op.recv};
  if (op.device) {
    // Device buffers: the same plan, run by the CUDA executor on op.stream.
    if (op.coll == plan::Coll::AllToAll) refuseDevicePeersPastBound(comm, *p);
    if (op.coll == plan::Coll::AllToAll && op.send == op.recv && comm->nranks > 1)
      b.send = cuda::deviceStageCopy(comm, op.send, busBytes(op, comm->nranks), op.stream);
    cuda::runDevicePlan(comm, *p, p, {&b, 1}, op.op, op.stream);
    scope.launched();
    return traced;
  }
  if (op.coll == plan::Coll::AllToAll && op.send == op.recv && comm->nranks > 1) {
    // In place, block q of the buffer is both sent to and received from
    // rank q, concurrently: send from a copy. The copy buffer is kept, so
    // only the first call of a size allocates.
    size_t bytes = busBytes(op, comm->nranks);
    if (comm->inPlaceStage.size() < bytes) comm->inPlaceStage.resize(bytes);
    memcpy(comm->inPlaceStage.data(), op.send, bytes);
    b.send = comm->inPlaceStage.data();
  }
  execute(comm, *p, {&b, 1}, op.op, streamsOutput(comm, op));
  return traced;
}

// Returns the plan's step count, for the batch's trace event.
size_t runPointToPoint(weftComm_t comm, const std::vector<const OpDesc*>& ops) {
  CallScope scope(comm, plan::Coll::SendRecv, ops.size());
  std::vector<algo::P2POp> calls;
  std::vector<BufferBinding> bindings;
  uint32_t elemSize = 0;
  for (const OpDesc* op : ops) {
    algo::P2POp c;
    c.isSend = op->isSend;
    c.peer = op->peer;
    // Point-to-point moves bytes: count them in bytes so calls of different
    // types share one plan.
    c.count = op->count * kernels::typeSize(op->type);
    c.bind = static_cast<uint16_t>(bindings.size());
    calls.push_back(c);
    bindings.push_back({op->send, op->recv});
    elemSize = 1;
  }
  plan::Plan p = algo::buildP2P(comm->nranks, comm->rank, elemSize, calls);
  kernels::RedOp copyOp;
  copyOp.type = weftUint8;
  // One plan runs on one kind of executor: a group's calls that move bytes
  // must all use device buffers or all host buffers.
  int device = -1;
  for (const OpDesc* op : ops) {
    if (op->count == 0) continue;
    if (device >= 0 && device != int(op->device))
      raise(weftInvalidArgument, "a group mixes point-to-point calls on device and host buffers");
    device = op->device;
  }
  if (device == 1) {
    refuseDevicePeersPastBound(comm, p);
    cuda::runDevicePlan(comm, p, nullptr, bindings, copyOp, ops[0]->stream);
    scope.launched();
    return p.stepCount();
  }
  execute(comm, p, bindings, copyOp);
  return p.stepCount();
}

}  // namespace

namespace {

// Whether every rank wants the init-time set-up: connecting device edges
// takes both ends, so the ranks decide alike. No rank with a GPU: nothing to
// decide (and no extra bootstrap round for host-only jobs).
bool everyRankSetsUpDevices(weftComm_t comm) {
  bool anyGpu = false;
  for (const PeerInfo& p : comm->peers) anyGpu |= p.cudaDev >= 0;
  if (!anyGpu) return false;
  std::vector<int32_t> want(comm->nranks, 0);
  want[comm->rank] = comm->config.get(settings::kDeviceSetup) ? 1 : 0;
  comm->bootstrap->allGather(want.data(), sizeof(int32_t));
  const int off = static_cast<int>(std::count(want.begin(), want.end(), 0));
  if (off && want[comm->rank])
    WEFT_INFO(kInit, "rank %d: %d rank(s) set WEFT_DEVICE_SETUP=0: the device path is set up at first use", comm->rank,
              off);
  return off == 0;
}

}  // namespace

namespace {

// A device AllReduce large enough to use every device channel, as every
// rank plans it (orders, hosts).
algo::CollArgs largeDeviceArgs(weftComm_t comm) {
  OpDesc op;
  op.coll = plan::Coll::AllReduce;
  // At least one split unit per rank and channel, so every channel is used.
  op.count = size_t(comm->nranks) * comm->deviceChannels * cuda::kDeviceSplitAlignBytes;
  op.device = true;
  algo::CollArgs a = callArgs(comm, op);
  a.nChannels = comm->deviceChannels;  // the most a large device call uses
  a.geometry = comm->geometry;
  if (!comm->ringOrders.empty()) {
    a.order = comm->ringOrders[0];
    a.channelOrders = comm->ringOrders;
  }
  a.hostOf = comm->hostOf;
  return a;
}

// Every shape of device call: each collective x algorithm the device
// filters allow on this layout, on the ll connections too where ll can
// carry it, AllToAll, and Send/Recv with every peer. Every rank builds the
// same list.
std::vector<plan::Plan> deviceCallShapes(weftComm_t comm) {
  algo::CollArgs a = largeDeviceArgs(comm);
  algo::CostInputs in = comm->costBase;
  in.deviceBuffers = true;
  std::vector<plan::Plan> out;
  for (plan::Coll c : {plan::Coll::AllReduce, plan::Coll::ReduceScatter, plan::Coll::AllGather,
                       plan::Coll::Broadcast, plan::Coll::Reduce}) {
    a.coll = c;
    for (int i = 0; i < algo::algoCount(); i++) {
      const algo::AlgoId id = algo::AlgoId(i);
      if (!comm->deviceAlgoFilter.allows(c, id) || !algo::algoApplies(id, c, in)) continue;
      out.push_back(algo::algoInfo(id).build(a));
      if (comm->deviceProtoFilter.allows(c, algo::kLowLatency) && algo::protoCarries(algo::kLowLatency, c, id, in)) {
        out.push_back(out.back());
        useLlConnections(out.back());
      }
    }
  }
  // Past WEFT_ALLTOALL_MAX_PEERS an AllToAll or a group with every peer is
  // refused on device buffers (refuseDevicePeersPastBound): nothing to warm.
  const int64_t maxPeers = comm->config.get(settings::kAllToAllMaxPeers);
  if (maxPeers > 0 && comm->nranks - 1 > maxPeers) return out;
  a.coll = plan::Coll::AllToAll;
  out.push_back(algo::buildAllToAll(a));
  std::vector<algo::P2POp> calls;
  for (int peer = 0; peer < comm->nranks; peer++)
    for (bool isSend : {true, false})
      if (peer != comm->rank) calls.push_back({.isSend = isSend, .peer = peer, .count = 1});
  out.push_back(algo::buildP2P(comm->nranks, comm->rank, 1, calls));
  return out;
}

}  // namespace

namespace {

// The most channels a ring-shaped device call that runs LL uses, as
// chooseAlgo decides it per size (0: none runs LL). Every rank decides
// alike (same topology, filters and settings).
int deviceLlRingChannels(weftComm_t comm) {
  int most = 0;
  for (plan::Coll c : {plan::Coll::AllReduce, plan::Coll::AllGather, plan::Coll::ReduceScatter})
    for (uint64_t bytes = 64; bytes <= (uint64_t(1) << 30); bytes *= 2) {
      OpDesc op;
      op.coll = c;
      op.type = weftUint8;
      op.count = bytes / (c == plan::Coll::AllReduce ? 1 : comm->nranks);
      op.device = true;
      const algo::CallChoice choice = chooseAlgo(comm, op);
      if (choice.proto == algo::kLowLatency && choice.algo == algo::kRing && choice.shape.nChannels * 2 <= kLlConnBase)
        most = std::max(most, choice.shape.nChannels);
    }
  return most;
}

}  // namespace

void setUpDevicePath(weftComm_t comm) {
  if (!everyRankSetsUpDevices(comm)) return;
  if (comm->nranks == 1) return cuda::setUpDeviceAtInit(comm, {});
  algo::CollArgs a = largeDeviceArgs(comm);
  // The ring's edges are the ones most device calls use (AllReduce,
  // AllGather, ReduceScatter rings), on the ll connections too for the
  // channels small calls use; other shapes connect at weftCommWarmup or
  // their first call. Every rank connects them, a rank without a GPU too
  // (its end of an IB edge with GPUDirect RDMA at the other end is a device
  // edge as well).
  std::vector<plan::Plan> rings{algo::algoInfo(algo::kRing).build(a)};
  if (const int llChannels = deviceLlRingChannels(comm)) {
    a.nChannels = llChannels;
    rings.push_back(algo::algoInfo(algo::kRing).build(a));
    useLlConnections(rings.back());
  }
  for (const plan::Plan& ring : rings) comm->connections->ensure(ring, /*device=*/true);
  cuda::setUpDeviceAtInit(comm, rings);
}

void warmUpDevicePath(weftComm_t comm) {
  if (inGroup()) raise(weftInvalidUsage, "weftCommWarmup inside a group: call it outside weftGroupStart/End");
  std::lock_guard<std::mutex> lock(comm->execMutex);
  if (comm->nranks == 1) return cuda::warmUpDevice(comm, {});
  const std::vector<plan::Plan> shapes = deviceCallShapes(comm);
  for (const plan::Plan& p : shapes) comm->connections->ensure(p, /*device=*/true);
  cuda::warmUpDevice(comm, shapes);
  WEFT_INFO(kInit, "rank %d: device path warmed up: %zu call shapes connected", comm->rank, shapes.size());
}

// A timeout outside the host executor (a connection set up on first use, a
// WEFT_CHECK exchange) gets the diagnosis too; the executor's own timeout
// error already carries it.
void runBatch(weftComm_t comm, const std::vector<OpDesc>& ops) {
  std::lock_guard<std::mutex> lock(comm->execMutex);
  try {
    std::vector<const OpDesc*> p2p;
    // Tracing costs the untraced path this one test per call.
    const bool traced = comm->trace != nullptr;
    for (const OpDesc& op : ops) {
      if (op.coll == plan::Coll::SendRecv) {
        p2p.push_back(&op);
      } else if (!traced) {
        runCollective(comm, op);
      } else {
        const int64_t start = nowNs();
        TracedCall shape;
        try {
          shape = runCollective(comm, op);
        } catch (const Error& e) {
          traceCall(comm, op, TracedCall{}, start, nowNs(), e.code());
          throw;
        }
        traceCall(comm, op, shape, start, nowNs());
      }
    }
    if (p2p.empty()) return;
    if (!traced) {
      runPointToPoint(comm, p2p);
      return;
    }
    const int64_t start = nowNs();
    size_t steps = 0;
    try {
      steps = runPointToPoint(comm, p2p);
    } catch (const Error& e) {
      traceP2P(comm, p2p, 0, start, nowNs(), e.code());
      throw;
    }
    traceP2P(comm, p2p, steps, start, nowNs());
  } catch (const Error& e) {
    if (e.code() != weftTimeout || strstr(e.what(), kDiagnosisMarker)) throw;
    const std::string why = explainTimeout(comm);
    raise(weftTimeout, "%s %s", e.what(), why.c_str());
  }
}

}  // namespace weft
