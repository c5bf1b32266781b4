// What every rank accepts from its peers at init (src/core/peer_info_check.h):
// N PeerInfo records as the init all-gather delivers them, then each rank's
// topology node and host ring view as the topology all-gathers deliver
// them. Whatever the checks accept must be safe for the consumers that run
// without sockets: host placement by hostHash, the host's ring views over
// the placed nodes (findPath indexes the nodes), ring composition, the
// path-type names of the log line and the cost inputs; then rank 0's
// cost-model inputs, which every rank adopts, into the selector.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "src/core/peer_info_check.h"
#include "src/topology/comm_topo.h"
#include "src/topology/cost_inputs.h"
#include "src/topology/paths.h"
#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "tests/fuzz/fuzz_common.h"

using namespace weft;

namespace {

// One host with two sockets, four GPUs and two NICs behind PCIe switches
// (tests/fuzz/corpus/topo_file/pcie-2socket-4gpu-2nic.json, trimmed).
const char kHost[] = R"({"weft_topology": 1, "hosts": [{"name": "box0", "nodes": [
  {"id": "cpu0", "kind": "cpu", "numa": 0, "package": 0, "cores": 40},
  {"id": "sw0", "kind": "pci_switch", "numa": 0, "bus_id": "0000:10:00.0"},
  {"id": "gpu0", "kind": "gpu", "numa": 0, "bus_id": "0000:11:00.0", "cuda_dev": 0, "sm": 86},
  {"id": "gpu1", "kind": "gpu", "numa": 0, "bus_id": "0000:12:00.0", "cuda_dev": 1, "sm": 86},
  {"id": "nic0", "kind": "nic", "numa": 0, "bus_id": "0000:13:00.0", "netdev": "ens1np0", "ib_device": "mlx5_0",
   "port": 1, "link_layer": "Ethernet", "speed_gbps": 100, "up": true},
  {"id": "cpu1", "kind": "cpu", "numa": 1, "package": 1, "cores": 40},
  {"id": "sw1", "kind": "pci_switch", "numa": 1, "bus_id": "0000:50:00.0"},
  {"id": "gpu2", "kind": "gpu", "numa": 1, "bus_id": "0000:51:00.0", "cuda_dev": 2, "sm": 86},
  {"id": "gpu3", "kind": "gpu", "numa": 1, "bus_id": "0000:52:00.0", "cuda_dev": 3, "sm": 86},
  {"id": "nic1", "kind": "nic", "numa": 1, "bus_id": "0000:53:00.0", "netdev": "ens2np0", "ib_device": "mlx5_1",
   "port": 1, "link_layer": "Ethernet", "speed_gbps": 100, "up": true}],
 "links": [
  {"a": "cpu0", "b": "sw0", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "sw0", "b": "gpu0", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "sw0", "b": "gpu1", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "sw0", "b": "nic0", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "cpu1", "b": "sw1", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "sw1", "b": "gpu2", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "sw1", "b": "gpu3", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "sw1", "b": "nic1", "kind": "pci", "pci_gen": 4, "pci_width": 16},
  {"a": "cpu0", "b": "cpu1", "kind": "smp", "bw": 20}]}]})";

const topo::System& hostSystem() {
  static const topo::System sys = topo::loadString(kHost);
  return sys;
}

// Hosts numbered in order of their first rank, as the communicator does.
std::vector<int> hostsOf(const std::vector<PeerInfo>& peers) {
  std::vector<uint64_t> hosts;
  std::vector<int> hostOf;
  for (const PeerInfo& p : peers) {
    size_t h = std::find(hosts.begin(), hosts.end(), p.hostHash) - hosts.begin();
    if (h == hosts.size()) hosts.push_back(p.hostHash);
    hostOf.push_back(static_cast<int>(h));
  }
  return hostOf;
}

// Rank 0's topology steps (src/core/comm.cc setUpTopology) on what the
// all-gathers delivered; `ownViews`: the host's ranks send the views they
// would compute (so composition runs on well-formed ones too).
void composeTopology(const std::vector<int>& hostOf, const std::vector<int32_t>& devices,
                     std::vector<topo::HostRingView> views, int nChannels, bool ownViews) {
  const topo::System& sys = hostSystem();
  std::vector<int> sameHost;
  for (size_t r = 0; r < hostOf.size(); ++r)
    if (hostOf[r] == hostOf[0]) sameHost.push_back(int(r));
  for (int32_t d : devices)
    if (d < 0) return;  // a rank without topology: everyone keeps rank order
  try {
    checkPeerDevices(devices, sameHost, sys, 0);
  } catch (const Error&) {
    return;
  }
  std::vector<topo::RankPlace> places;
  for (int r : sameHost) {
    WEFT_FUZZ_CHECK(size_t(devices[size_t(r)]) < sys.nodes.size());
    places.push_back({0, devices[size_t(r)]});
  }
  const bool multiHost = hostOf.size() > 0 && *std::max_element(hostOf.begin(), hostOf.end()) > 0;
  std::vector<topo::HostRingView> mine;
  try {
    mine = topo::hostRingViews(sys, places, nChannels, multiHost);
  } catch (const Error&) {
    return;
  }
  WEFT_FUZZ_CHECK(mine.size() == sameHost.size());
  if (ownViews)
    for (size_t i = 0; i < sameHost.size(); ++i) views[size_t(sameHost[i])] = mine[i];
  topo::CommRings rings;
  try {
    checkHostRingViews(views, nChannels);
    rings = topo::composeRings(hostOf, views, nChannels);
  } catch (const Error&) {
    return;
  }
  WEFT_FUZZ_CHECK(int(rings.orders.size()) == nChannels);
  for (const auto& order : rings.orders) WEFT_FUZZ_CHECK(order.size() == hostOf.size());
  char line[256];
  snprintf(line, sizeof line, "paths %s, NIC %s %.3g GB/s", topo::toString(rings.summary.intraType),
           topo::toString(rings.summary.nicType), rings.summary.interHostBw);
  algo::CostInputs base;
  (void)topo::costInputsFromTopology(rings.summary, int(hostOf.size()), base);
  for (size_t i = 1; i < places.size(); ++i) (void)topo::peerTopoKind(sys, places[0], places[i]);
}

// What agreeOnCosts (src/core/comm.cc) does with rank 0's inputs once they
// pass: the communicator's own counts replace the counts, then every
// collective's choice and every algorithm's estimate read the rest.
void chooseWithCosts(const algo::CostInputs& sent, int nranks, int nHosts, int nChannels, uint64_t bytes) {
  try {
    checkPeerCostInputs(sent, 0);
  } catch (const Error&) {
    return;
  }
  algo::CostInputs c = sent;
  c.nranks = nranks;
  c.nHosts = nHosts;
  c.hostRanksMin = c.hostRanksMax = 0;
  // The sent host runs stay (agreeOnCosts replaces them with the
  // communicator's own): whatever passed the check, the cost model must
  // read them without trusting them to add up to nranks (hostOfRanks).
  c.maxChannels = nChannels;
  c.bytes = bytes;
  static const algo::AlgoFilter all = algo::parseAlgoFilter("");
  for (plan::Coll coll : {plan::Coll::AllReduce, plan::Coll::ReduceScatter, plan::Coll::AllGather,
                          plan::Coll::Broadcast, plan::Coll::Reduce}) {
    for (int a = 0; a < algo::algoCount(); ++a) (void)algo::estimateUs(coll, algo::AlgoId(a), c);
    try {
      const algo::AlgoId chosen = algo::selectAlgo(coll, c, all);
      WEFT_FUZZ_CHECK(algo::index(chosen) < algo::algoCount());
    } catch (const Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const int n = 1 + in.byte() % 8;
  const int nChannels = 1 + in.byte() % topo::kMaxViewChannels;
  const bool ownViews = in.byte() & 1;
  std::vector<PeerInfo> peers(static_cast<size_t>(n));
  for (PeerInfo& p : peers) p = in.take<PeerInfo>();
  std::vector<int32_t> devices(static_cast<size_t>(n));
  for (int32_t& d : devices) d = in.take<int32_t>();
  std::vector<topo::HostRingView> views(static_cast<size_t>(n));
  for (topo::HostRingView& v : views) v = in.take<topo::HostRingView>();
  const uint64_t bytes = in.take<uint32_t>();
  const std::vector<int> hostOf = hostsOf(peers);  // only equality of hostHash: safe unchecked
  const auto costs = std::make_unique<algo::CostInputs>(in.take<algo::CostInputs>());
  chooseWithCosts(*costs, n, 1 + *std::max_element(hostOf.begin(), hostOf.end()), nChannels, bytes);
  try {
    checkPeerInfos(peers);
  } catch (const Error&) {
    return 0;
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    const PeerInfo& p = peers[i];
    WEFT_FUZZ_CHECK(p.rank == int32_t(i));
    WEFT_FUZZ_CHECK(strnlen(p.hostname, sizeof p.hostname) < sizeof p.hostname);
    WEFT_FUZZ_CHECK(strnlen(p.bellShmName, sizeof p.bellShmName) < sizeof p.bellShmName);
    WEFT_FUZZ_CHECK(strncmp(p.bellShmName, "/weft-bell-", 11) == 0 && !strchr(p.bellShmName + 1, '/'));
    WEFT_FUZZ_CHECK(p.cudaDev >= -1 && p.cudaDev <= kMaxPeerCudaDev);
  }
  composeTopology(hostOf, devices, std::move(views), nChannels, ownViews);
  return 0;
}
