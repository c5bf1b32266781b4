// Ring and tree inputs ordered by the topology. Given the system and where
// each rank runs (host and device node), buildRings() returns, per channel:
//  - a ring order with the ranks of one host contiguous, hosts in index
//    order, devices inside a host ordered for the widest ring (NVLink and
//    shared PCIe switches first);
//  - per host, the NIC the channel's traffic leaves and enters through:
//    the NIC nearest the host's devices, channels spread over such NICs;
//  - the predicted bandwidth of the channel: every hop's links are loaded
//    per direction by all channels, and a channel gets the smallest
//    bw / load over the links it uses.
#pragma once

#include <string>
#include <vector>

#include "src/topology/graph.h"
#include "src/topology/paths.h"

namespace weft::topo {

struct RankPlace {
  int host = 0;
  int device = -1;  // node index of the rank's GPU, or of its NUMA node's CPU
};

struct NicChoice {
  int nic = -1;  // node index, -1 when the host has no usable NIC
  PathType type = PathType::Dis;
  double bw = 0;  // min(path bandwidth, NIC speed), GB/s
  std::string reason;
};

// Usable for traffic between hosts: up, not loopback.
bool usableNic(const Node& n);
// A NIC's bandwidth in GB/s: its speed, else its network link, else kLocalBw.
double nicBandwidth(const System& sys, int nic);

// The NIC each device (all on one host) would use: best path type, then
// bandwidth; devices tied between NICs are spread, least-used NIC first.
std::vector<NicChoice> chooseNics(const System& sys, const std::vector<int>& devices);

struct RingChannel {
  std::vector<int> order;  // ranks; order[i] sends to order[(i + 1) % n]
  std::vector<int> nics;   // per RingSet::hosts entry; -1 on a single host
  double bw = 0;           // predicted GB/s for this channel
  PathType intraType = PathType::Loc;  // worst device-to-device path in a host
  PathType nicType = PathType::Loc;    // worst device-to-NIC path (LOC if none)
};

struct RingSet {
  std::vector<int> hosts;  // host indices in ring order
  std::vector<RingChannel> channels;
  double totalBw() const;
};

// One host's part of every channel: the NIC it leaves and enters through
// (-1 on a single host or without a usable NIC) and the device order of its
// chain (a closed ring on a single host). Depends on that host alone.
struct HostChains {
  std::vector<int> nics;                 // per channel
  std::vector<std::vector<int>> chains;  // per channel: device node indices
};
HostChains hostChains(const System& sys, const std::vector<int>& devices, int nChannels, bool multiHost);

// ranks[r] is rank r's place. Throws weftInvalidArgument on a bad place.
RingSet buildRings(const System& sys, const std::vector<RankPlace>& ranks, int nChannels);

// The double tree is built over hosts; inside a host each tree is a chain.
struct TreeInputs {
  std::vector<int> hosts;                // host index per tree position
  std::vector<std::vector<int>> chains;  // per host: its ranks, chain order
  std::vector<int> nics;                 // per host: NIC of the chain's head
};
TreeInputs treeInputs(const RingSet& rings, const std::vector<RankPlace>& ranks, int channel = 0);

// What the algorithm selector needs from the topology (NCCL's graph
// summary): shape, per-channel ring bandwidth and path types.
struct TopoSummary {
  int nHosts = 0;
  int maxRanksPerHost = 0;
  int nChannels = 0;
  double ringBwPerChannel = 0;  // GB/s
  // The same inside the hosts alone: the chains and their legs to the NIC,
  // without the NIC's own speed (that is interHostBw); 0: not known.
  double ringHostBwPerChannel = 0;
  double interHostBw = 0;       // slowest NIC in use, GB/s (0 on one host)
  std::vector<double> hostNicBw;  // per host in ring order: its slowest NIC in use, GB/s (empty on one host)
  PathType intraType = PathType::Loc;
  PathType nicType = PathType::Loc;
  // Some rank runs on a CPU node: its bytes are copied by the CPU through
  // host memory, at the measured shared-memory pace whatever the links say.
  bool hostMemoryRanks = false;
};
TopoSummary summarize(const System& sys, const std::vector<RankPlace>& ranks, int nChannels);

// Places for a CPU-only process set: `ranksPerHost` ranks on every host,
// spread round-robin over each host's NUMA nodes; or, with useGpus, one
// rank per GPU of every host.
std::vector<RankPlace> defaultPlaces(const System& sys, bool useGpus, int ranksPerHost = 0);

// How two ranks would talk, from their path: "shm" on one host without a
// P2P-capable GPU path, "p2p" between GPUs with NVLink or PCIe P2P, "net"
// across hosts. Symmetric: transportFor(a, b) == transportFor(b, a).
const char* transportFor(const System& sys, const RankPlace& a, const RankPlace& b);

}  // namespace weft::topo
