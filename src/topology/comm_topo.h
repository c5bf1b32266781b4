// The topology as a communicator uses it. Each rank knows its own host's
// graph only; the ranks of one host compute that host's chains (hostChains)
// identically, and an all-gather of one fixed-size view per rank lets every
// rank compose the same ring orders and summary (composeRings), without
// shipping whole graphs between hosts.
#pragma once

#include <cstdint>
#include <vector>

#include "src/topology/graph.h"
#include "src/topology/rings.h"

namespace weft::topo {

// The most channels a view describes (the communicator allows 1..16).
inline constexpr int kMaxViewChannels = 16;

// Where a rank runs on `host` of sys: the GPU with CUDA index cudaDev when
// there is one; else the CPU node of NUMA node `numa`; else the host's CPU
// nodes round-robin by localIndex (the rank's index among its host's ranks).
// Throws weftInvalidArgument when the host has no CPU node.
RankPlace placeRank(const System& sys, int host, int cudaDev, int numa, int localIndex);

// What one rank contributes to the communicator's ring all-gather: its
// place in its host's chains and the host's share of the ring's bandwidth.
// Plain data: the same bytes on every rank of a host.
struct HostRingView {
  int16_t pos[kMaxViewChannels] = {};  // this rank's position in its host's chain, per channel
  float bw[kMaxViewChannels] = {};     // the host's predicted GB/s per channel
  float hostBw[kMaxViewChannels] = {}; // the same inside the host alone (without the NIC's own speed)
  float nicBw = 0;                     // slowest NIC the host's channels use, GB/s (0: none)
  int8_t intraType = 0;                // PathType: worst device-to-device hop in the host
  int8_t nicType = 0;                  // PathType: worst device-to-NIC hop (LOC without NICs)
  int8_t hostMemory = 0;               // 1: a rank of the host runs on a CPU node (the CPU copies its bytes)
  int8_t pad = 0;
};

// The views of the ranks of one host (hostRanks: their places, in rank
// order, all on one host of sys). multiHost: the communicator spans several
// hosts, so each channel's chain enters and leaves through a NIC. Channel
// bandwidths load the host's links (and each NIC, both ways) with every
// channel, as buildRings does for a whole cluster.
std::vector<HostRingView> hostRingViews(const System& sys, const std::vector<RankPlace>& hostRanks, int nChannels,
                                        bool multiHost);

struct CommRings {
  std::vector<std::vector<int>> orders;  // per channel: ranks, host-contiguous, hosts in index order
  TopoSummary summary;
};

// hostOf[r]: rank r's host index in the communicator (0..nHosts-1);
// views[r]: rank r's view. Pure: every rank gets the same answer.
CommRings composeRings(const std::vector<int>& hostOf, const std::vector<HostRingView>& views, int nChannels);

// What the topology says a pair of ranks could use (transportFor): GPUs
// close enough for peer-to-peer, shared memory, or the network; Unknown
// when the communicator has no topology for the pair.
enum class PeerTopoKind : uint8_t { Unknown, P2p, Shm, Net };
const char* toString(PeerTopoKind k);  // "p2p", "shm", "net", "unknown"
PeerTopoKind peerTopoKind(const System& sys, const RankPlace& a, const RankPlace& b);

}  // namespace weft::topo
