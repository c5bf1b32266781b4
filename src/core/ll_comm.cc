#include "src/core/ll_comm.h"

#include <cstdio>
#include <cstring>
#include <limits>

#include "algorithms/one_shot.h"
#include "algorithms/selector.h"
#include "src/core/comm.h"
#include "src/util/error.h"
#include "src/util/log.h"

namespace weft {
namespace {

// What each rank publishes at set-up: its region's name (empty: this rank
// cannot or will not use LL, so nobody does) and its lines per buffer.
struct RegionName {
  char name[64] = {};
  uint64_t linesPerBuffer = 0;
};

bool protoAllowedAnywhere(const algo::ProtoFilter& f, algo::ProtoId p) {
  for (int c = 0; c < plan::kNumColls; c++)
    if (f.allows(plan::Coll(c), p)) return true;
  return false;
}

// f without ll, every collective still with a protocol (simple where ll
// was the only one: *forced).
algo::ProtoFilter withoutLl(algo::ProtoFilter f, bool* forced) {
  for (int c = 0; c < plan::kNumColls; c++) {
    auto& allowed = f.allowed[size_t(c)];
    allowed.reset(size_t(algo::index(algo::kLowLatency)));
    if (allowed.none()) {
      allowed.set(size_t(algo::index(algo::kSimple)));
      *forced = true;
    }
  }
  return f;
}

// Device calls: ll is the interpreter's LL on the device FIFOs, which needs
// FIFOs the GPU polls itself: one host, and not WEFT_SHM_DISABLE (a pair
// could then go through a socket proxy). Simple stays allowed wherever ll
// is, since ll cannot carry every call (AllToAll, Send/Recv).
algo::ProtoFilter deviceProtoFilterOf(weftComm* comm, int nHosts) {
  algo::ProtoFilter f = comm->protoFilter;
  bool forced = false;
  if (nHosts > 1 || comm->config.get(settings::kShmDisable)) return withoutLl(f, &forced);
  for (auto& allowed : f.allowed)
    if (allowed.test(size_t(algo::index(algo::kLowLatency)))) allowed.set(size_t(algo::index(algo::kSimple)));
  return f;
}

// LL is off: take it out of the filter, keeping every collective a protocol.
void withoutLowLatency(weftComm* comm, const char* why) {
  bool forced = false;
  comm->protoFilter = withoutLl(comm->protoFilter, &forced);
  if (forced && comm->rank == 0)
    WEFT_WARN("WEFT_PROTO allows only ll, which this communicator cannot use (%s): using simple", why);
  else
    WEFT_INFO(kInit, "ll protocol off: %s", why);
}

RegionName createRegion(weftComm* comm, uint64_t lines) {
  RegionName me;
  try {
    comm->ll->own = ShmSegment::create("weft-ll", ll::regionBytes(lines));
    snprintf(me.name, sizeof(me.name), "%s", comm->ll->own.name().c_str());
    me.linesPerBuffer = lines;
  } catch (const Error& e) {
    WEFT_WARN("ll protocol: %s", e.what());
  }
  return me;
}

ll::WaitSetup waitSetup(weftComm* comm) {
  ll::WaitSetup w;
  w.bell = comm->bell;
  w.aborting = &comm->aborting;
  w.asyncError = &comm->asyncError;
  w.timeoutMs = comm->timeoutMs;
  w.busyPoll = comm->busyPoll;
  w.state = &comm->callState;
  return w;
}

uint64_t callBytes(const OpDesc& op, int nranks) {
  return plan::largestBufferElems(op.coll, op.count, nranks) * kernels::typeSize(op.type);
}

}  // namespace

void setUpLowLatency(weftComm* comm, int nHosts) {
  comm->deviceProtoFilter = deviceProtoFilterOf(comm, nHosts);
  const int64_t buffBytes = comm->config.get(settings::kLlBuffsize);
  const char* off = nHosts > 1                                               ? "ranks on more than one host"
                    : !protoAllowedAnywhere(comm->protoFilter, algo::kLowLatency) ? "WEFT_PROTO excludes it"
                    : buffBytes <= 0                                         ? "WEFT_LL_BUFFSIZE is 0"
                    : comm->config.get(settings::kShmDisable)                ? "WEFT_SHM_DISABLE"
                                                                             : nullptr;
  if (comm->nranks == 1) off = "one rank";
  // Every rank takes part in the all-gather whenever ranks share the host,
  // so that ranks whose settings differ agree (on off) instead of hanging.
  if (comm->nranks == 1 || nHosts > 1) return withoutLowLatency(comm, off);
  comm->ll = std::make_unique<LowLatencyComm>();
  const uint64_t lines =
      std::max<uint64_t>((uint64_t(std::max<int64_t>(buffBytes, 0)) + ll::kLinePayload - 1) / ll::kLinePayload,
                         uint64_t(comm->nranks));
  std::vector<RegionName> all(size_t(comm->nranks));
  if (!off) all[size_t(comm->rank)] = createRegion(comm, lines);
  comm->bootstrap->allGather(all.data(), sizeof(RegionName));
  for (RegionName& r : all) {
    r.name[sizeof(r.name) - 1] = 0;  // a peer's name ends inside its array, and names a region weft made
    if (strncmp(r.name, "/weft-ll-", 9) != 0 || r.linesPerBuffer != all[0].linesPerBuffer) {
      comm->ll.reset();
      comm->bootstrap->barrier();
      return withoutLowLatency(comm, off ? off : "a rank could not create its region, or ranks differ in WEFT_LL_BUFFSIZE");
    }
  }
  std::vector<ll::Region> regions(size_t(comm->nranks));
  for (int r = 0; r < comm->nranks; r++) {
    const RegionName& n = all[size_t(r)];
    if (r == comm->rank) {
      regions[size_t(r)] = ll::regionAt(comm->ll->own.data(), lines);
      continue;
    }
    comm->ll->peers.push_back(ShmSegment::open(n.name, ll::regionBytes(lines)));
    regions[size_t(r)] = ll::regionAt(comm->ll->peers.back().data(), lines);
  }
  comm->bootstrap->barrier();  // every rank has mapped every region
  comm->ll->own.unlink();
  comm->ll->engine = std::make_unique<ll::Engine>(comm->rank, comm->nranks, lines, std::move(regions),
                                                  comm->peerBells, waitSetup(comm));
  WEFT_INFO(kInit, "ll protocol: %lu lines of %zu data bytes per round and rank", static_cast<unsigned long>(lines),
            ll::kLinePayload);
}

void refreshLowLatencyLimits(weftComm* comm) {
  LowLatencyComm& ll = *comm->ll;
  const std::optional<algo::AlgoId> oneShot = algo::oneShotId();
  for (int c = 0; c < plan::kNumColls; c++) {
    uint64_t limit = 0;
    ll.maxBytes[size_t(c)] = 0;
    if (!oneShot || !algo::algoSupports(*oneShot, plan::Coll(c))) continue;
    // Sizes from 1 byte up in steps of 2^(1/4), as far as (oneshot, ll) stays the choice.
    for (double b = 1; b < 1ull << 36; b = std::max(b + 1, b * 1.189207)) {
      algo::CostInputs in = comm->costBase;
      in.bytes = uint64_t(b);
      bool chosen = false;
      try {
        chosen = algo::selectCall(plan::Coll(c), in, comm->algoFilter, comm->geometry, comm->protoFilter).proto ==
                 algo::kLowLatency;
      } catch (const Error&) {
        // The filters leave this collective nothing: the general path says so at its call.
      }
      if (!chosen) break;
      limit = b * 1.189207 >= double(1ull << 36) ? std::numeric_limits<uint64_t>::max() : uint64_t(b);
    }
    ll.maxBytes[size_t(c)] = limit;
  }
  ll.limitsReady = true;
}

bool runLowLatencyIfChosen(weftComm* comm, const OpDesc& op) {
  LowLatencyComm* ll = comm->ll.get();
  // A narrow wire format (compression) is a property of the ring's steps.
  if (!ll || op.device || op.wire != plan::Wire::Native) return false;
  if (!ll->limitsReady) [[unlikely]] refreshLowLatencyLimits(comm);
  if (callBytes(op, comm->nranks) > ll->maxBytes[size_t(op.coll)]) return false;
  runLowLatency(comm, op);
  return true;
}

void runLowLatency(weftComm* comm, const OpDesc& op) {
  ll::Call c;
  c.coll = op.coll;
  c.send = op.send;
  c.recv = op.recv;
  c.count = op.count;
  c.elemSize = static_cast<uint32_t>(kernels::typeSize(op.type));
  c.root = op.root;
  c.op = op.op;
  comm->ll->engine->run(c);
  if (logEnabled(LogLevel::Info, kColl)) [[unlikely]]
    WEFT_INFO(kColl, "%s count %zu type %s op %d root %d: %s, ll, 1 channel(s), %lu rounds so far",
              plan::collName(op.coll), op.count, kernels::typeName(op.type), static_cast<int>(op.op.kind), op.root,
              algo::kOneShotName, static_cast<unsigned long>(comm->ll->engine->roundsRun()));
}

}  // namespace weft
