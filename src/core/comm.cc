#include "src/core/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <set>
#include <strings.h>

#include "src/core/connections.h"
#include "src/core/host_identity.h"
#include "src/core/plan_cache.h"
#include "src/core/tune_file.h"
#include "transports/ib/ib_transport.h"
#include "src/util/env.h"
#include "src/util/error.h"
#include "src/util/log.h"

weftComm::weftComm() = default;

weftComm::~weftComm() {
  magic = 0;
  // Connections (and their proxy threads) go before the bootstrap they may
  // report through.
  connections.reset();
  bootstrap.reset();
}

void weftComm::setAsyncError(weftResult_t code, const std::string& why) {
  int expected = weftSuccess;
  if (asyncError.compare_exchange_strong(expected, code)) {
    std::lock_guard<std::mutex> lock(errorMutex);
    lastError = why;
  }
  if (bell) weft::ring(bell);
}

namespace weft {
namespace {

std::mutex registryMutex;
std::set<const weftComm*>& registry() {
  static std::set<const weftComm*> r;
  return r;
}

constexpr int64_t kDefaultTimeoutMs = 300000;

int64_t chooseTimeout(const weftConfig_t* config) {
  if (config && config->timeoutMs != WEFT_CONFIG_UNDEF_INT) {
    if (config->timeoutMs <= 0) raise(weftInvalidArgument, "config.timeoutMs=%d must be positive", config->timeoutMs);
    return config->timeoutMs;
  }
  int64_t t = envInt("WEFT_TIMEOUT_MS", kDefaultTimeoutMs);
  if (t <= 0) raise(weftInvalidArgument, "WEFT_TIMEOUT_MS=%ld must be positive", static_cast<long>(t));
  return t;
}

plan::FifoGeometry chooseGeometry() {
  plan::FifoGeometry g;
  int64_t slots = envInt("WEFT_NSLOTS", 8);
  int64_t buff = envInt("WEFT_BUFFSIZE", 4 << 20);
  if (slots < 2 || slots > kFifoMaxSlots)
    raise(weftInvalidArgument, "WEFT_NSLOTS=%ld must be in 2..%u", static_cast<long>(slots), kFifoMaxSlots);
  if (buff < slots * 1024 || buff > (1ll << 30))
    raise(weftInvalidArgument, "WEFT_BUFFSIZE=%ld must be between %ld (1 KiB per slot) and 1 GiB",
          static_cast<long>(buff), static_cast<long>(slots * 1024));
  g.nSlots = static_cast<uint32_t>(slots);
  g.slotBytes = static_cast<uint64_t>(buff / slots) / 64 * 64;
  return g;
}

int chooseChannels(const weftConfig_t* config) {
  int64_t n = envInt("WEFT_NCHANNELS", 1);
  if (config && config->minCTAs != WEFT_CONFIG_UNDEF_INT && n < config->minCTAs) n = config->minCTAs;
  if (config && config->maxCTAs != WEFT_CONFIG_UNDEF_INT && n > config->maxCTAs) n = config->maxCTAs;
  if (n < 1 || n > 16) raise(weftInvalidArgument, "channel count %ld must be in 1..16 (WEFT_NCHANNELS)", static_cast<long>(n));
  return static_cast<int>(n);
}

}  // namespace

// Per-hop latency and bandwidth of the host transports, measured on a
// 2-core machine (see docs/tuning.md); WEFT_TUNE_* override them.
algo::CostInputs defaultCostInputs(int nranks, int nHosts) {
  algo::CostInputs c;
  c.nranks = nranks;
  c.nHosts = nHosts;
  c.intra.latencyUs = envInt("WEFT_TUNE_SHM_LAT_NS", 3000) / 1000.0;
  c.intra.bandwidthGBs = envInt("WEFT_TUNE_SHM_BW_MBS", 8000) / 1000.0;
  c.inter.latencyUs = envInt("WEFT_TUNE_NET_LAT_NS", 25000) / 1000.0;
  c.inter.bandwidthGBs = envInt("WEFT_TUNE_NET_BW_MBS", 2500) / 1000.0;
  return c;
}

void registerComm(weftComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(comm);
}

void unregisterComm(weftComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().erase(comm);
}

bool isLiveComm(const weftComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().count(comm) > 0;
}

weftComm* createComm(const weftUniqueId& id, int nranks, int rank, const weftConfig_t* config) {
  if (nranks < 1) raise(weftInvalidArgument, "nranks=%d must be at least 1", nranks);
  if (rank < 0 || rank >= nranks) raise(weftInvalidArgument, "rank=%d is out of range for nranks=%d", rank, nranks);
  if (config && (config->magic != WEFT_CONFIG_MAGIC || config->size < sizeof(weftConfig_t)))
    raise(weftInvalidArgument, "config was not initialised with WEFT_CONFIG_INITIALIZER");
  setLogRank(rank);

  auto comm = std::make_unique<weftComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->name = config && config->commName ? config->commName : "comm";
  comm->timeoutMs = chooseTimeout(config);
  comm->geometry = chooseGeometry();
  comm->nChannels = chooseChannels(config);
  comm->netName = config && config->netName ? config->netName : envString("WEFT_NET").value_or("");
  if (!comm->netName.empty() && strcasecmp(comm->netName.c_str(), "Socket") && strcasecmp(comm->netName.c_str(), "IB"))
    raise(weftInvalidArgument, "network '%s' (config.netName / WEFT_NET) is unknown: use Socket or IB",
          comm->netName.c_str());

  comm->bootstrap = Bootstrap::join(id, rank, nranks, comm->timeoutMs);

  comm->bellSegment = ShmSegment::create("weft-bell", 4096);
  comm->bell = new (comm->bellSegment.data()) Doorbell();

  PeerInfo self;
  self.rank = rank;
  self.pid = getpid();
  self.hostHash = hostHash();
  self.processHash = processHash();
  self.bellAddr = reinterpret_cast<uint64_t>(comm->bell);
  snprintf(self.bellShmName, sizeof(self.bellShmName), "%s", comm->bellSegment.name().c_str());
  snprintf(self.hostname, sizeof(self.hostname), "%s", hostName().c_str());
  self.ibUsable = ibUnusableReason().empty() ? 1 : 0;
  comm->peers.resize(nranks);
  comm->peers[rank] = self;
  comm->bootstrap->allGather(comm->peers.data(), sizeof(PeerInfo));

  WEFT_INFO(kInit, "weft %d.%d.%d %s rank %d/%d on %s pid %d, timeout %ld ms, %d channel(s), %u slots x %lu B",
            WEFT_MAJOR, WEFT_MINOR, WEFT_PATCH, comm->name.c_str(), rank, nranks, self.hostname, self.pid,
            static_cast<long>(comm->timeoutMs), comm->nChannels, comm->geometry.nSlots,
            static_cast<unsigned long>(comm->geometry.slotBytes));
  for (const PeerInfo& p : comm->peers)
    WEFT_INFO(kInit, "peer rank %d: host %s pid %d%s", p.rank, p.hostname, p.pid,
              p.hostHash == self.hostHash ? " (same host)" : "");

  comm->peerBells.assign(nranks, nullptr);
  for (const PeerInfo& p : comm->peers) {
    if (p.hostHash != self.hostHash) continue;
    if (p.processHash == self.processHash && p.pid == self.pid) {
      comm->peerBells[p.rank] = reinterpret_cast<Doorbell*>(p.bellAddr);
    } else {
      comm->peerBellSegments.push_back(ShmSegment::open(p.bellShmName, sizeof(Doorbell)));
      comm->peerBells[p.rank] = static_cast<Doorbell*>(comm->peerBellSegments.back().data());
    }
  }
  comm->bootstrap->barrier();
  comm->bellSegment.unlink();

  weftComm* raw = comm.get();
  comm->bootstrap->setPeerLostHandler([raw](int peer) {
    raw->setAsyncError(weftRemoteError, "rank " + std::to_string(peer) + " left without destroying its communicator");
    WEFT_WARN("rank %d: peer rank %d is gone (process died or connection dropped)", raw->rank, peer);
  });

  comm->algoFilter = algo::parseAlgoFilter(envString("WEFT_ALGO").value_or(""));
  if (auto proto = envString("WEFT_PROTO"); proto && strcasecmp(proto->c_str(), "simple") != 0)
    raise(weftInvalidArgument, "WEFT_PROTO=%s: host buffers use the Simple protocol only", proto->c_str());
  std::vector<uint64_t> hosts;
  for (const PeerInfo& p : comm->peers) {
    size_t h = std::find(hosts.begin(), hosts.end(), p.hostHash) - hosts.begin();
    if (h == hosts.size()) hosts.push_back(p.hostHash);
    comm->hostOf.push_back(static_cast<int>(h));
  }
  comm->costBase = defaultCostInputs(nranks, static_cast<int>(hosts.size()));
  if (auto tune = envString("WEFT_TUNE_FILE")) loadTuneFile(*tune, &comm->costBase);
  {
    // Every rank must pick the same algorithm for a call: all use rank 0's
    // constants, whatever each one read.
    std::vector<algo::CostInputs> all(nranks);
    all[rank] = comm->costBase;
    comm->bootstrap->allGather(all.data(), sizeof(algo::CostInputs));
    comm->costBase = all[0];
    comm->costBase.nranks = nranks;
    comm->costBase.nHosts = static_cast<int>(hosts.size());
  }

  comm->plans = std::make_unique<PlanCache>();
  comm->connections = std::make_unique<Connections>(raw);
  std::vector<int> order(nranks);
  std::iota(order.begin(), order.end(), 0);
  comm->connections->ensureRing(order, comm->nChannels);

  registerComm(raw);
  return comm.release();
}

}  // namespace weft
