#include "src/core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <set>
#include <strings.h>

#include "src/core/connections.h"
#include "src/core/gdr_choice.h"
#include "src/core/host_identity.h"
#include "src/core/plan_cache.h"
#include "src/core/tune_file.h"
#include "src/cuda/device_route.h"
#include "src/topology/comm_topo.h"
#include "src/topology/cost_inputs.h"
#include "src/topology/local_system.h"
#include "src/topology/topo_file.h"
#include "transports/ib/ib_transport.h"
#include "src/util/env.h"
#include "src/util/error.h"
#include "src/util/log.h"

weftComm::weftComm() = default;

weftComm::~weftComm() {
  magic = 0;
  // Connections (and their proxy threads) go before the bootstrap they may
  // report through.
  deviceState.reset();
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

std::string orderText(const std::vector<int>& order) {
  std::string t;
  for (int r : order) t += (t.empty() ? "" : " ") + std::to_string(r);
  return t;
}

// Issue 4: order the rings by the topology and feed the cost model from it.
// Each rank places itself on its host's graph (WEFT_TOPO_FILE or detection,
// cached per process); two small all-gathers (device node, then the host's
// chain view) let every rank compose the same orders. A rank whose host
// cannot be detected makes all ranks keep rank order and measured costs; a
// bad WEFT_TOPO_FILE fails the init on every rank.
void setUpTopology(weftComm* comm) {
  const int n = comm->nranks, me = comm->rank;
  std::vector<int> sameHost;
  for (int r = 0; r < n; r++)
    if (comm->hostOf[r] == comm->hostOf[me]) sameHost.push_back(r);
  const int localIndex = static_cast<int>(std::find(sameHost.begin(), sameHost.end(), me) - sameHost.begin());
  constexpr int32_t kDetectFailed = -1, kFileFailed = -2;
  topo::LocalTopology local;
  std::string problem;
  std::vector<int32_t> devices(n, kDetectFailed);
  try {
    local = topo::localTopology();
    devices[me] = topo::placeRank(*local.system, local.host, comm->cudaDev, topo::currentNumaNode(), localIndex).device;
  } catch (const Error& e) {
    problem = e.what();
    devices[me] = envString("WEFT_TOPO_FILE") ? kFileFailed : kDetectFailed;
  }
  comm->bootstrap->allGather(devices.data(), sizeof(int32_t));
  comm->peerTopoKind.assign(n, "");
  comm->ringOrders.clear();
  for (int r = 0; r < n; r++) {
    if (devices[r] == kFileFailed)
      raise(weftInvalidArgument, "topology: rank %d cannot use WEFT_TOPO_FILE%s%s", r, problem.empty() ? "" : ": ",
            problem.c_str());
    if (devices[r] < 0) {
      WEFT_WARN("rank %d: topology unknown on rank %d%s%s; rings keep rank order", me, r, problem.empty() ? "" : ": ",
                problem.c_str());
      return;
    }
  }
  const topo::System& sys = *local.system;
  std::vector<topo::RankPlace> places;
  for (int r : sameHost) places.push_back({local.host, devices[r]});
  const bool multiHost = comm->costBase.nHosts > 1;
  std::vector<topo::HostRingView> views(n);
  views[me] = topo::hostRingViews(sys, places, comm->nChannels, multiHost)[localIndex];
  comm->bootstrap->allGather(views.data(), sizeof(topo::HostRingView));
  topo::CommRings rings = topo::composeRings(comm->hostOf, views, comm->nChannels);
  comm->ringOrders = rings.orders;
  comm->costBase = topo::costInputsFromTopology(rings.summary, n, comm->costBase);
  for (size_t i = 0; i < sameHost.size(); i++)
    if (sameHost[i] != me) comm->peerTopoKind[sameHost[i]] = topo::transportFor(sys, places[localIndex], places[i]);

  char line[256];
  snprintf(line, sizeof line,
           "%d ranks on %d host(s), %d channel(s), ring %.3g GB/s per channel (paths %s, NIC %s %.3g GB/s); "
           "cost model: intra %.3g GB/s, inter %.3g GB/s",
           n, rings.summary.nHosts, comm->nChannels, rings.summary.ringBwPerChannel, topo::toString(rings.summary.intraType),
           topo::toString(rings.summary.nicType), rings.summary.interHostBw, comm->costBase.intra.bandwidthGBs,
           comm->costBase.inter.bandwidthGBs);
  std::string used = std::string("weft communicator ") + comm->name + ", topology " + local.source + ": " + line;
  for (size_t c = 0; c < rings.orders.size(); c++)
    used += "; ring " + std::to_string(c) + ": " + orderText(rings.orders[c]);
  WEFT_INFO(kGraph, "rank %d on %s/%s: %s", me, sys.hosts[local.host].c_str(), sys.nodes[devices[me]].id.c_str(),
            used.c_str());
  // One writer per host: the host's first rank (threads of one process
  // would otherwise race on the same file).
  if (auto dump = envString("WEFT_TOPO_DUMP_FILE"); dump && localIndex == 0) {
    topo::dumpFile(sys, *dump, used);
    WEFT_INFO(kGraph, "topology: written to %s", dump->c_str());
  }
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
  comm->cudaDev = cuda::currentDevice();  // -1 without CUDA or a GPU
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
  self.cudaDev = comm->cudaDev;
  comm->gdr = chooseDeviceGdr(rank, comm->cudaDev, self.ibUsable);
  self.gdrMode = static_cast<int32_t>(comm->gdr.mode);
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
    raw->setAsyncError(weftRemoteError, "rank " + std::to_string(peer) +
                                            " is gone: its process ended without destroying its communicator, or its "
                                            "host stopped answering (WEFT_SOCKET_DEAD_PEER_S)");
    WEFT_WARN("rank %d: peer rank %d is gone (process died or connection dropped)", raw->rank, peer);
  });

  const std::string algoSpec = envString("WEFT_ALGO").value_or("");
  comm->algoFilter = algo::parseAlgoFilter(algoSpec);
  if (std::string ignored = algo::ignoredCollectives(comm->algoFilter); !ignored.empty()) {
    // Once per communicator on rank 0 at WARN (a filter that silently did
    // nothing would be as bad as one that broke the job), INFO elsewhere.
    if (rank == 0)
      WEFT_WARN("WEFT_ALGO=%s allows no algorithm that implements %s: those keep the selector's choice "
                "(name one per collective, e.g. 'allgather:ring', to choose)", algoSpec.c_str(), ignored.c_str());
    else
      WEFT_INFO(kTune, "WEFT_ALGO=%s does not apply to %s", algoSpec.c_str(), ignored.c_str());
  }
  comm->checkCalls = envInt("WEFT_CHECK", 0) != 0;
  if (int64_t s = envInt("WEFT_SLICE_BYTES", 0)) {
    if (s < 64 || uint64_t(s) > comm->geometry.slotBytes)
      raise(weftInvalidArgument, "WEFT_SLICE_BYTES=%ld must be between 64 and the FIFO slot (%lu bytes)",
            static_cast<long>(s), static_cast<unsigned long>(comm->geometry.slotBytes));
    comm->sliceOverride = uint64_t(s) / 64 * 64;
  }
  if (int64_t c = envInt("WEFT_CALL_CHANNELS", 0)) {
    if (c < 1 || c > comm->nChannels)
      raise(weftInvalidArgument, "WEFT_CALL_CHANNELS=%ld must be between 1 and the communicator's %d channel(s) "
            "(WEFT_NCHANNELS)", static_cast<long>(c), comm->nChannels);
    comm->channelsOverride = int(c);
  }
  comm->protoFilter = algo::parseProtoFilter(envString("WEFT_PROTO").value_or(""));
  std::vector<uint64_t> hosts;
  for (const PeerInfo& p : comm->peers) {
    size_t h = std::find(hosts.begin(), hosts.end(), p.hostHash) - hosts.begin();
    if (h == hosts.size()) hosts.push_back(p.hostHash);
    comm->hostOf.push_back(static_cast<int>(h));
  }
  {
    cpu_set_t cpus;
    int ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    int local = 0;
    for (const PeerInfo& p : comm->peers) local += p.hostHash == self.hostHash;
    comm->oversubscribed = local > ncpu;
  }
  comm->costBase = defaultCostInputs(nranks, static_cast<int>(hosts.size()));
  setUpTopology(comm.get());
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
    comm->costBase.maxChannels = comm->nChannels;
    const algo::CostInputs& c = comm->costBase;
    if (c.measuredRanks > 0 && (c.measuredRanks != c.nranks || c.measuredHosts != c.nHosts))
      WEFT_INFO(kTune, "tune file curves were measured on %d rank(s) over %d host(s), not %d over %d: "
                "AllReduce uses the fitted constants", c.measuredRanks, c.measuredHosts, c.nranks, c.nHosts);
    else if (c.measuredRanks > 0)
      WEFT_INFO(kTune, "AllReduce algorithm choice follows the tune file's measured curves");
  }

  comm->plans = std::make_unique<PlanCache>();
  comm->connections = std::make_unique<Connections>(raw);
  // The ring every channel's plans will use (launch.cc passes channel 0's
  // order as CollArgs.order), connected up front.
  std::vector<int> order(nranks);
  std::iota(order.begin(), order.end(), 0);
  if (!comm->ringOrders.empty()) order = comm->ringOrders[0];
  comm->connections->ensureRing(order, comm->nChannels);

  registerComm(raw);
  return comm.release();
}

}  // namespace weft
