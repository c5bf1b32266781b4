// What every rank accepts from its peers at init, checked before anything
// uses it: the PeerInfo all-gather, the topology all-gathers (each rank's
// device node, then its host's ring view). Every check throws
// weftRemoteError naming the rank and the field. Pure: no sockets, no
// communicator, so the fuzz build links it (tests/fuzz/peer_info_fuzz.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/cost_model.h"
#include "src/topology/comm_topo.h"
#include "src/topology/graph.h"
#include "transports/transport.h"

namespace weft {

// The largest CUDA device ordinal a peer may name: far above any machine's
// GPU count, low enough that nothing sized or indexed by it can blow up.
inline constexpr int32_t kMaxPeerCudaDev = 1023;

// Terminates the strings of each entry in place, then checks that entry i
// is rank i, names a doorbell segment weft makes ("/weft-bell-" and name
// characters only) and a CUDA device in -1..kMaxPeerCudaDev.
void checkPeerInfos(std::vector<PeerInfo>& peers);

// devices[r]: the topology node rank r placed itself on (negative: its
// topology is unknown). Each rank of sameHost with a node must name one of
// sys's GPU or CPU nodes on `host`: those are indexed by the ring views.
void checkPeerDevices(const std::vector<int32_t>& devices, const std::vector<int>& sameHost, const topo::System& sys,
                      int host);

// views[r]: rank r's host ring view. Path types must be PathType values,
// bandwidths of the first nChannels channels and of the NIC finite and not
// negative (ring positions are checked by topo::composeRings).
void checkHostRingViews(const std::vector<topo::HostRingView>& views, int nChannels);

// c: the cost-model inputs `rank` sent, which every rank then uses (rank
// 0's, so all choose the same algorithms). Latencies, costs and the
// channel bandwidth must be finite and not negative, bandwidths and
// bandwidth scales finite and positive (the model divides by them), each
// measured curve at most kMaxMeasuredPoints points (it is indexed by them)
// of growing sizes and positive times, counts not negative, and
// deviceBuffers a bool's byte.
void checkPeerCostInputs(const algo::CostInputs& c, int rank);

}  // namespace weft
