// weft-sim's cluster: the directed links a transfer can cross, each with a
// bandwidth and a per-hop latency, and the route between any two ranks.
//
// Inside a host a transfer crosses the sender's link out and the receiver's
// link in (NVLink, shared memory: each rank has its own), and between GPUs
// that are not peer-to-peer the host's links in between (hostVia). Across hosts it
// crosses the sending NIC's link up to its switch, the switches' links on
// the fewest-hops route between the two switches (a top-of-rack uplink to a
// spine carries every flow between its rack and the others: oversubscription
// is that link's bandwidth), and the receiving NIC's link down. NICs without
// a switch are joined directly (each NIC's up and down link only). Which
// NIC a rank's transfer uses depends on its connection (the channel): each
// rank chooses its NICs as the IB transport does (transports/ib/nic_choice.h:
// the closest NICs, spread by local rank, channel c on rails[c % rails]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transports/ib/nic_choice.h"

namespace weft::sim {

struct Cluster {
  std::vector<int> hostOf;  // per rank: its host index (0..hosts-1)
  // Directed links.
  std::vector<double> linkGBs;    // bandwidth, GB/s (1 GB/s = 1000 bytes per us)
  std::vector<double> linkLatUs;  // latency a transfer pays for crossing it
  std::vector<std::string> linkName;
  std::vector<int> rankOut, rankIn;  // per rank: its own links inside the host
  // Same-host pairs whose bytes leave their own links (GPUs that are not
  // peer-to-peer: through pinned host memory, up one socket's PCIe tree,
  // across the sockets' link, down the other's): per host, per (local a,
  // local b) at [a * ranks + b], the links crossed between a's own link out
  // and b's own link in; empty for every pair: none (localOf then empty).
  std::vector<std::vector<std::vector<int>>> hostVia;
  std::vector<int> localOf;  // per rank: its index among its host's ranks (with hostVia)
  // Per rank: its NIC choice (ib::chooseNics: rails index its host's
  // hostNics; no rails when the host has none).
  std::vector<ib::NicChoice> rankNics;
  std::vector<std::vector<int>> hostNics;  // per host: its NICs (indices into nicUp)
  std::vector<int> nicUp, nicDown;   // per NIC: NIC -> fabric, fabric -> NIC
  std::vector<int> nicHost;          // per NIC: its host
  std::vector<int> nicSwitch;        // per NIC: its switch, -1 when NICs are joined directly
  int nSwitches = 0;
  // switchRoute[a * nSwitches + b]: the links from switch a to switch b.
  std::vector<std::vector<int>> switchRoute;
  double stepOverheadUs = 0;  // per step a rank runs (executor hand-off)

  int addLink(double gbs, double latUs, std::string name);
  // Rank `rank` (the next one: ranks are added in order), local index
  // `localRank` on its host, chooses among `ports` (its host's hostNics, in
  // order) as the IB transport would.
  void addRankNics(int localRank, const std::vector<ib::NicCandidate>& ports);
  // The NIC (index into nicUp) rank r's connection `conn` uses: the IB
  // transport's nicForChannel; -1 when its host has none.
  int nicOf(int r, int conn) const;
  // Appends the links a transfer from rank a to rank b on connection
  // `conn` crosses.
  void route(int a, int b, int conn, std::vector<int>* links) const;
  // The links between a's and b's own on one host (hostVia; nullptr: none).
  const std::vector<int>* via(int a, int b) const;
  int hosts() const;
};

// H hosts of layout[h] ranks, each rank with its own intra link, K NICs per
// host joined directly, all equally close to every rank (the IB transport's
// choice then starts local rank l at NIC l mod K and gives channel c NIC
// (l + c) mod K): the command line's cluster.
struct SimpleCluster {
  std::vector<int> layout;
  double intraGBs = 100, intraLatUs = 1;
  double nicGBs = 12.5, netLatUs = 5;
  int nicsPerHost = 1;
  double stepOverheadUs = 0;
  // What the cost model sees of a topology file: per host, its slowest NIC
  // (empty: every host's is nicGBs).
  std::vector<double> hostNicGBs;
};
Cluster buildCluster(const SimpleCluster& s);

// Checks that every link has a bandwidth above 0, every route exists and
// the per-rank tables have one entry per rank; throws weftInvalidArgument
// naming the problem.
void validate(const Cluster& c);

}  // namespace weft::sim
