#include "src/core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <set>
#include <strings.h>

#include "algorithms/one_shot.h"
#include "src/core/connections.h"
#include "src/core/device_channels.h"
#include "src/core/launch.h"
#include "src/core/direct_comm.h"
#include "src/core/ll_comm.h"
#include "src/core/diagnose.h"
#include "src/core/host_identity.h"
#include "src/core/peer_info_check.h"
#include "src/core/plan_cache.h"
#include "src/core/trace.h"
#include "src/core/tune_file.h"
#include "src/exec/cuda/device_route.h"
#include "src/topology/comm_topo.h"
#include "src/topology/cost_inputs.h"
#include "src/topology/detect.h"
#include "src/topology/topo_file.h"
#include "src/util/settings.h"
#include "src/util/doorbell.h"
#include "src/util/error.h"
#include "src/util/log.h"

weftComm::weftComm() = default;

weftComm::~weftComm() {
  magic = 0;
  // Flushes this rank's trace file (destroy and abort both end here).
  trace.reset();
  // Connections (and their proxy threads) go before the bootstrap they may
  // report through.
  deviceState.reset();
  connections.reset();
  bootstrap.reset();
}

void weftComm::setAsyncError(weftResult_t code, const std::string& why) {
  int expected = weftSuccess;
  {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (asyncError.compare_exchange_strong(expected, code) || (errorClaimed && expected == code)) {
      lastError = why;
      errorClaimed = false;
    }
  }
  if (bell) weft::ring(bell);
}

void weftComm::claimAsyncError(weftResult_t code, const std::string& provisional) {
  int expected = weftSuccess;
  {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (asyncError.compare_exchange_strong(expected, code)) {
      lastError = provisional;
      errorClaimed = true;
    }
  }
  if (bell) weft::ring(bell);
}

namespace weft {
namespace {

std::mutex registryMutex;
// Held by forEachLiveComm while it uses communicators, and taken by
// unregisterComm before a communicator is freed.
std::mutex inUseMutex;
std::set<const weftComm*>& registry() {
  static std::set<const weftComm*> r;
  return r;
}

int64_t chooseTimeout(const settings::Config& cfg, const weftConfig_t* config) {
  if (config && config->timeoutMs != WEFT_CONFIG_UNDEF_INT) {
    if (config->timeoutMs <= 0) raise(weftInvalidArgument, "config.timeoutMs=%d must be positive", config->timeoutMs);
    return config->timeoutMs;
  }
  int64_t t = cfg.get(settings::kTimeoutMs);
  if (t <= 0) raise(weftInvalidArgument, "WEFT_TIMEOUT_MS=%ld must be positive", static_cast<long>(t));
  return t;
}

plan::FifoGeometry chooseGeometry(const settings::Config& cfg) {
  plan::FifoGeometry g;
  int64_t slots = cfg.get(settings::kNSlots);
  int64_t buff = cfg.get(settings::kBuffsize);
  // A slot is its FIFO's 32-bit counter modulo the slot count: only a count
  // that divides 2^32 keeps consecutive counters on distinct slots when the
  // counter wraps (after 2^32 pieces, which a long job reaches).
  if (slots < 2 || slots > kFifoMaxSlots || (slots & (slots - 1)) != 0)
    raise(weftInvalidArgument, "WEFT_NSLOTS=%ld must be a power of two in 2..%u", static_cast<long>(slots),
          kFifoMaxSlots);
  if (buff < slots * 1024 || buff > (1ll << 30))
    raise(weftInvalidArgument, "WEFT_BUFFSIZE=%ld must be between %ld (1 KiB per slot) and 1 GiB",
          static_cast<long>(buff), static_cast<long>(slots * 1024));
  g.nSlots = static_cast<uint32_t>(slots);
  g.slotBytes = static_cast<uint64_t>(buff / slots) / 64 * 64;
  return g;
}

// WEFT_NCHANNELS, raised to the lower bound and capped at the upper one; a
// bound in the config (minCTAs, maxCTAs) takes the place of the variable's
// (WEFT_MIN_NCHANNELS, WEFT_MAX_NCHANNELS: NCCL's NCCL_MIN/MAX_NCHANNELS).
int chooseChannels(const settings::Config& cfg, const weftConfig_t* config) {
  int64_t n = cfg.get(settings::kNChannels);
  int64_t lo = cfg.value(settings::kMinChannels.id).text ? cfg.get(settings::kMinChannels) : 0;
  int64_t hi = cfg.value(settings::kMaxChannels.id).text ? cfg.get(settings::kMaxChannels) : INT64_MAX;
  if (config && config->minCTAs != WEFT_CONFIG_UNDEF_INT) lo = config->minCTAs;
  if (config && config->maxCTAs != WEFT_CONFIG_UNDEF_INT) hi = config->maxCTAs;
  if (n < lo) n = lo;
  if (n > hi) n = hi;
  if (n < 1 || n > 16)
    raise(weftInvalidArgument,
          "channel count %ld must be in 1..16 (WEFT_NCHANNELS, bounded by WEFT_MIN_NCHANNELS/WEFT_MAX_NCHANNELS "
          "or the config's minCTAs/maxCTAs)", static_cast<long>(n));
  return static_cast<int>(n);
}

std::string orderText(const std::vector<int>& order) {
  std::string t;
  for (int r : order) t += (t.empty() ? "" : " ") + std::to_string(r);
  return t;
}

// Order the rings by the topology and feed the cost model from it.
// Each rank places itself on its host's graph (WEFT_TOPO_FILE or detection,
// cached per process); two small all-gathers (device node, then the host's
// chain view) let every rank compose the same orders. A rank whose host
// cannot be detected makes all ranks keep rank order and measured costs; a
// bad WEFT_TOPO_FILE fails the init on every rank.
DeviceLink deviceLinkOf(topo::PathType intra) {
  switch (intra) {
    case topo::PathType::Nvl: return DeviceLink::NvLink;
    case topo::PathType::Loc: return DeviceLink::SameGpu;
    case topo::PathType::Pix:
    case topo::PathType::Pxb: return DeviceLink::PciePeer;
    default: return DeviceLink::HostMemory;
  }
}

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
    devices[me] = comm->config.get(settings::kTopoFile) ? kFileFailed : kDetectFailed;
  }
  comm->bootstrap->allGather(devices.data(), sizeof(int32_t));
  comm->peerTopoKind.assign(n, topo::PeerTopoKind::Unknown);
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
  checkPeerDevices(devices, sameHost, sys, local.host);
  std::vector<topo::RankPlace> places;
  for (int r : sameHost) places.push_back({local.host, devices[r]});
  const bool multiHost = comm->costBase.nHosts > 1;
  std::vector<topo::HostRingView> views(n);
  views[me] = topo::hostRingViews(sys, places, comm->nChannels, multiHost)[localIndex];
  comm->bootstrap->allGather(views.data(), sizeof(topo::HostRingView));
  checkHostRingViews(views, comm->nChannels);
  topo::CommRings rings = topo::composeRings(comm->hostOf, views, comm->nChannels);
  comm->ringOrders = rings.orders;
  comm->costBase = topo::costInputsFromTopology(rings.summary, n, comm->costBase);
  const DeviceLink link = deviceLinkOf(rings.summary.intraType);
  const int64_t channelSetting = comm->config.get(settings::kDeviceNChannels);
  int sameGpuCtas = 0;
  if (link == DeviceLink::SameGpu && channelSetting == 0) {  // every rank sees the same link
    std::vector<int32_t> resident(n, 0);
    resident[me] = cuda::residentDeviceCtas(comm->cudaDev);
    comm->bootstrap->allGather(resident.data(), sizeof(int32_t));
    sameGpuCtas = sameGpuCtaShare(resident, comm->hostOf);
  }
  comm->deviceChannels = deviceChannelsFor(link, multiHost, channelSetting, comm->nChannels, sameGpuCtas);
  for (size_t i = 0; i < sameHost.size(); i++)
    if (sameHost[i] != me) comm->peerTopoKind[sameHost[i]] = topo::peerTopoKind(sys, places[localIndex], places[i]);

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
  if (auto dump = comm->config.get(settings::kTopoDumpFile); dump && localIndex == 0) {
    topo::dumpFile(sys, *dump, used);
    WEFT_INFO(kGraph, "topology: written to %s", dump->c_str());
  }
}

}  // namespace

// Per-hop latency and bandwidth of the host transports, measured on a
// 2-core machine (see docs/tuning.md); WEFT_TUNE_* override them.
algo::CostInputs defaultCostInputs(int nranks, int nHosts, const settings::Config& cfg) {
  algo::CostInputs c;
  c.nranks = nranks;
  c.nHosts = nHosts;
  c.intra.latencyUs = cfg.get(settings::kTuneShmLatNs) / 1000.0;
  c.intra.bandwidthGBs = cfg.get(settings::kTuneShmBwMbs) / 1000.0;
  c.inter.latencyUs = cfg.get(settings::kTuneNetLatNs) / 1000.0;
  c.inter.bandwidthGBs = cfg.get(settings::kTuneNetBwMbs) / 1000.0;
  return c;
}

algo::CostInputs defaultCostInputs(int nranks, int nHosts) {
  return defaultCostInputs(nranks, nHosts, settings::Config::read());
}

void registerComm(weftComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(comm);
}

void unregisterComm(weftComm* comm) {
  std::lock_guard<std::mutex> inUse(inUseMutex);
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().erase(comm);
}

void forEachLiveComm(const std::function<void(weftComm*)>& fn) {
  std::lock_guard<std::mutex> inUse(inUseMutex);
  std::vector<weftComm*> live;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    for (const weftComm* c : registry()) live.push_back(const_cast<weftComm*>(c));
  }
  for (weftComm* c : live) fn(c);
}

bool isLiveComm(const weftComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().count(comm) > 0;
}

// The steps of createComm, in the order it runs them.
namespace {

void checkArguments(int nranks, int rank, const weftConfig_t* config) {
  if (nranks < 1) raise(weftInvalidArgument, "nranks=%d must be at least 1", nranks);
  if (rank < 0 || rank >= nranks) raise(weftInvalidArgument, "rank=%d is out of range for nranks=%d", rank, nranks);
  if (config && (config->magic != WEFT_CONFIG_MAGIC || config->size < sizeof(weftConfig_t)))
    raise(weftInvalidArgument, "config was not initialised with WEFT_CONFIG_INITIALIZER");
}

// The settings snapshot and what follows from it and weftConfig_t alone.
void readConfig(weftComm* comm, const weftConfig_t* config) {
  comm->config = settings::Config::read();
  settings::logConfig(comm->config);
  const settings::Config& cfg = comm->config;
  comm->name = config && config->commName ? config->commName : "comm";
  comm->timeoutMs = chooseTimeout(cfg, config);
  comm->geometry = chooseGeometry(cfg);
  comm->nChannels = chooseChannels(cfg, config);
  comm->cudaDev = cuda::currentDevice();  // -1 without CUDA or a GPU
  comm->netName = config && config->netName ? config->netName : cfg.get(settings::kNet).value_or("");
  if (!comm->netName.empty() && !isNetworkTransport(comm->netName))
    raise(weftInvalidArgument, "network '%s' (config.netName / WEFT_NET) is unknown: use %s", comm->netName.c_str(),
          networkTransportNames().c_str());
}

void joinBootstrap(weftComm* comm, const weftUniqueId& id) {
  comm->bootstrap = Bootstrap::join(id, comm->rank, comm->nranks, comm->timeoutMs);
}

void createDoorbell(weftComm* comm) {
  comm->bellSegment = ShmSegment::create("weft-bell", 4096);
  comm->bell = new (comm->bellSegment.data()) Doorbell();
}

void exchangePeerInfo(weftComm* comm) {
  const int rank = comm->rank, nranks = comm->nranks;
  PeerInfo self;
  self.rank = rank;
  self.pid = getpid();
  self.hostHash = hostHash();
  self.processHash = processHash();
  snprintf(self.bellShmName, sizeof(self.bellShmName), "%s", comm->bellSegment.name().c_str());
  snprintf(self.hostname, sizeof(self.hostname), "%s", hostName().c_str());
  self.cudaDev = comm->cudaDev;
  ownCpuMask(self.cpuMask);
  comm->transports = std::make_unique<TransportSet>();
  comm->transports->publishFacts(rank, comm->cudaDev, self);
  comm->peers.resize(nranks);
  comm->peers[rank] = self;
  comm->bootstrap->allGather(comm->peers.data(), sizeof(PeerInfo));
  checkPeerInfos(comm->peers);

  WEFT_INFO(kInit, "weft %d.%d.%d %s rank %d/%d on %s pid %d, timeout %ld ms, %d channel(s), %u slots x %lu B",
            WEFT_MAJOR, WEFT_MINOR, WEFT_PATCH, comm->name.c_str(), rank, nranks, self.hostname, self.pid,
            static_cast<long>(comm->timeoutMs), comm->nChannels, comm->geometry.nSlots,
            static_cast<unsigned long>(comm->geometry.slotBytes));
  for (const PeerInfo& p : comm->peers)
    WEFT_INFO(kInit, "peer rank %d: host %s pid %d%s", p.rank, p.hostname, p.pid,
              p.hostHash == self.hostHash ? " (same host)" : "");
}

// Same-host peers' doorbells, mapped before this rank's segment name is
// unlinked (after the barrier every peer has mapped it). Threads of one
// process map each other's segments too, never take a peer's address: each
// mapping lives as long as the communicator that made it, so a peer that
// destroys its communicator first leaves a bell that can still be rung.
void mapPeerDoorbells(weftComm* comm) {
  const PeerInfo& self = comm->peers[comm->rank];
  comm->peerBells.assign(comm->nranks, nullptr);
  for (const PeerInfo& p : comm->peers) {
    if (p.hostHash != self.hostHash) continue;
    if (p.rank == comm->rank) {
      comm->peerBells[p.rank] = comm->bell;
    } else {
      comm->peerBellSegments.push_back(ShmSegment::open(p.bellShmName, sizeof(Doorbell)));
      comm->peerBells[p.rank] = static_cast<Doorbell*>(comm->peerBellSegments.back().data());
    }
  }
  comm->bootstrap->barrier();
  comm->bellSegment.unlink();
}

void watchForLostPeers(weftComm* comm) {
  weftComm* raw = comm;
  comm->bootstrap->setPeerLostHandler([raw](int peer) {
    raw->setAsyncError(weftRemoteError, "rank " + std::to_string(peer) +
                                            " is gone: its process ended without destroying its communicator, or its "
                                            "host stopped answering (WEFT_SOCKET_DEAD_PEER_S)");
    WEFT_WARN("rank %d: peer rank %d is gone (process died or connection dropped)", raw->rank, peer);
  });
}

void chooseAlgorithms(weftComm* comm) {
  const int rank = comm->rank;
  const std::string algoSpec = comm->config.get(settings::kAlgo).value_or("");
  comm->algoFilter = algo::parseAlgoFilter(algoSpec);
  comm->deviceAlgoFilter = algo::withoutAlgo(comm->algoFilter, *algo::oneShotId());
  if (std::string ignored = algo::ignoredCollectives(comm->algoFilter); !ignored.empty()) {
    // Once per communicator on rank 0 at WARN (a filter that silently did
    // nothing would be as bad as one that broke the job), INFO elsewhere.
    if (rank == 0)
      WEFT_WARN("WEFT_ALGO=%s allows no algorithm that implements %s: those keep the selector's choice "
                "(name one per collective, e.g. 'allgather:ring', to choose)", algoSpec.c_str(), ignored.c_str());
    else
      WEFT_INFO(kTune, "WEFT_ALGO=%s does not apply to %s", algoSpec.c_str(), ignored.c_str());
  }
}

// Settings that pin what every call does instead of the selector's choice.
void readCallOverrides(weftComm* comm) {
  const settings::Config& cfg = comm->config;
  comm->checkCalls = cfg.get(settings::kCheck) != 0;
  if (int64_t s = cfg.get(settings::kSliceBytes)) {
    if (s < 64 || uint64_t(s) > comm->geometry.slotBytes)
      raise(weftInvalidArgument, "WEFT_SLICE_BYTES=%ld must be between 64 and the FIFO slot (%lu bytes)",
            static_cast<long>(s), static_cast<unsigned long>(comm->geometry.slotBytes));
    comm->sliceOverride = uint64_t(s) / 64 * 64;
  }
  const int64_t dc = cfg.get(settings::kDeviceNChannels);
  if (dc < 0 || dc > 64)
    raise(weftInvalidArgument, "WEFT_DEVICE_NCHANNELS=%ld must be between 0 (from the topology) and 64",
          static_cast<long>(dc));
  comm->deviceChannels = deviceChannelsFor(DeviceLink::HostMemory, false, dc, comm->nChannels);
  if (int64_t c = cfg.get(settings::kCallChannels)) {
    if (c < 1 || c > comm->nChannels)
      raise(weftInvalidArgument, "WEFT_CALL_CHANNELS=%ld must be between 1 and the communicator's %d channel(s) "
            "(WEFT_NCHANNELS)", static_cast<long>(c), comm->nChannels);
    comm->channelsOverride = int(c);
  }
}

void chooseProtocols(weftComm* comm) {
  comm->protoFilter = algo::parseProtoFilter(comm->config.get(settings::kProto).value_or(""));
}

// hostOf (hosts numbered in order of their first rank) and whether this
// host runs more ranks than this process has CPUs. Returns the host count.
int placeOnHosts(weftComm* comm) {
  const PeerInfo& self = comm->peers[comm->rank];
  std::vector<uint64_t> hosts;
  for (const PeerInfo& p : comm->peers) {
    size_t h = std::find(hosts.begin(), hosts.end(), p.hostHash) - hosts.begin();
    if (h == hosts.size()) hosts.push_back(p.hostHash);
    comm->hostOf.push_back(static_cast<int>(h));
  }
  // A rank's own CPUs bound where its proxy threads can run; the host's
  // ranks together may have more (each bound to its own core).
  const int ownCpus = std::max(cpuCount(self.cpuMask), 1);
  const int ncpu = std::max(hostCpuCount(comm->peers, self.hostHash), ownCpus);
  int local = 0;
  for (const PeerInfo& p : comm->peers) local += p.hostHash == self.hostHash;
  comm->oversubscribed = local > ncpu;
  comm->ranksFillCores = 2 * local > ncpu || ownCpus < 2;
  const std::string spin = comm->config.get(settings::kSpin).value_or("auto");
  std::optional<SpinMode> mode = parseSpinMode(spin);
  if (!mode) {
    WEFT_WARN("WEFT_SPIN=%s is not auto, 1 (busy) or 0 (yield): using auto", spin.c_str());
    mode = SpinMode::Auto;
  }
  comm->busyPoll = busyPolls(*mode, local, ncpu);
  WEFT_INFO(kInit, "%d rank(s) on this host over %d CPU(s) (this process: %d): waits %s", local, ncpu, ownCpus,
            comm->busyPoll ? "busy-poll" : "yield");
  comm->streamMinBytes = uint64_t(std::max<int64_t>(comm->config.get(settings::kStreamMinBytes), 0));
  return static_cast<int>(hosts.size());
}

void placeOnTopology(weftComm* comm, int nHosts) {
  comm->costBase = defaultCostInputs(comm->nranks, nHosts, comm->config);
  setUpTopology(comm);
  if (auto tune = comm->config.get(settings::kTuneFile)) loadTuneFile(*tune, &comm->costBase);
}

// Every rank must pick the same algorithm for a call: all use rank 0's
// constants, whatever each one read.
void agreeOnCosts(weftComm* comm, int nHosts) {
  std::vector<algo::CostInputs> all(comm->nranks);
  all[comm->rank] = comm->costBase;
  comm->bootstrap->allGather(all.data(), sizeof(algo::CostInputs));
  checkPeerCostInputs(all[0], 0);
  comm->costBase = all[0];
  comm->costBase.nranks = comm->nranks;
  comm->costBase.nHosts = nHosts;
  algo::setHostPlacement(comm->costBase, comm->hostOf);  // the same on every rank
  comm->costBase.maxChannels = comm->nChannels;
  const algo::CostInputs& c = comm->costBase;
  if (c.measuredRanks > 0 && (c.measuredRanks != c.nranks || c.measuredHosts != c.nHosts))
    WEFT_INFO(kTune, "tune file curves were measured on %d rank(s) over %d host(s), not %d over %d: "
              "AllReduce uses the fitted constants", c.measuredRanks, c.measuredHosts, c.nranks, c.nHosts);
  else if (c.measuredRanks > 0)
    WEFT_INFO(kTune, "AllReduce algorithm choice follows the tune file's measured curves");
}

// The ring every channel's plans will use (launch.cc passes channel 0's
// order as CollArgs.order), connected up front.
void connectRings(weftComm* comm) {
  comm->plans = std::make_unique<PlanCache>();
  comm->connections = std::make_unique<Connections>(comm);
  std::vector<int> order(comm->nranks);
  std::iota(order.begin(), order.end(), 0);
  if (!comm->ringOrders.empty()) order = comm->ringOrders[0];
  comm->connections->ensureRing(order, comm->nChannels);
}

}  // namespace

weftComm* createComm(const weftUniqueId& id, int nranks, int rank, const weftConfig_t* config) {
  checkArguments(nranks, rank, config);
  setLogRank(rank);
  installDiagnoseSignal();
  auto comm = std::make_unique<weftComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  readConfig(comm.get(), config);
  joinBootstrap(comm.get(), id);
  createDoorbell(comm.get());
  exchangePeerInfo(comm.get());
  mapPeerDoorbells(comm.get());
  openTrace(comm.get());
  watchForLostPeers(comm.get());
  answerDiagnosisQueries(comm.get());
  chooseAlgorithms(comm.get());
  readCallOverrides(comm.get());
  chooseProtocols(comm.get());
  const int nHosts = placeOnHosts(comm.get());
  placeOnTopology(comm.get(), nHosts);
  agreeOnCosts(comm.get(), nHosts);
  setUpLowLatency(comm.get(), nHosts);
  setUpDirect(comm.get(), nHosts);
  connectRings(comm.get());
  setUpDevicePath(comm.get());
  // Every rank's ring connections are made before any rank leaves init: a
  // rank that destroys its communicator right away would otherwise close a
  // listener that a peer is still connecting to, and strand it until its
  // timeout.
  comm->bootstrap->barrier();
  registerComm(comm.get());
  return comm.release();
}

}  // namespace weft
