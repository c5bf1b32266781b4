#include "src/topology/rings.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

#include "src/topology/comm_topo.h"
#include "src/util/error.h"

namespace weft::topo {

bool usableNic(const Node& n) { return n.kind == NodeKind::Nic && n.up && n.linkLayer != "Loopback"; }

namespace {

// Exhaustive ordering up to this many devices per host (7! rings), greedy above.
constexpr size_t kMaxExhaustive = 8;

PathType worse(PathType a, PathType b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }

std::string describeNic(const Node& n) {
  char buf[160];
  const std::string& label = !n.ibDevice.empty() ? n.ibDevice : n.netdev;
  snprintf(buf, sizeof buf, "%s (%s, %s, %g Gb/s)", n.id.c_str(), label.c_str(), n.linkLayer.c_str(), n.speedGbps);
  return buf;
}

double nicBw(const System& sys, int nic) {
  const Node& n = sys.nodes[nic];
  if (n.speedGbps > 0) return netBw(n.speedGbps);
  double best = 0;
  for (int l : sys.linksOf(nic))
    if (sys.links[l].kind == LinkKind::Net) best = std::max(best, sys.links[l].bw);
  return best > 0 ? best : kLocalBw;
}

// Directed link use: link index * 2 + (0: a->b, 1: b->a).
using HopList = std::vector<int>;

void appendPath(HopList& hops, const Path& p) {
  for (const Hop& h : p.hops) hops.push_back(h.link * 2 + (h.forward ? 0 : 1));
}

class Router {
 public:
  explicit Router(const System& sys) : sys_(sys) {}
  const Path& path(int from, int to) {
    auto key = std::make_pair(from, to);
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, findPath(sys_, from, to)).first;
    return it->second;
  }

 private:
  const System& sys_;
  std::map<std::pair<int, int>, Path> cache_;
};

// Bottleneck of one hop list when it alone loads the links.
double soloBottleneck(const System& sys, const HopList& hops, std::vector<int>& load) {
  for (int h : hops) ++load[h];
  double bw = kLocalBw;
  for (int h : hops) bw = std::min(bw, sys.links[h / 2].bw / load[h]);
  for (int h : hops) load[h] = 0;
  return bw;
}

// Widest chain first; among equals, the one whose ends sit closest to the
// NIC (the NIC legs carry every byte entering and leaving the host), then
// the one with the closest device-to-device paths.
struct ChainScore {
  double bw = -1;
  int nicLegTypes = 0;
  int typeSum = 0;
  bool disconnected = false;
  bool betterThan(const ChainScore& o) const {
    if (disconnected != o.disconnected) return !disconnected;
    if (bw != o.bw) return bw > o.bw;
    if (nicLegTypes != o.nicLegTypes) return nicLegTypes < o.nicLegTypes;
    return typeSum < o.typeSum;
  }
};

class HostOrderer {
 public:
  HostOrderer(const System& sys, Router& router) : sys_(sys), router_(router), load_(sys.links.size() * 2, 0) {}

  // Device order for one host: a closed ring when nic < 0, else a chain
  // that enters from and leaves to `nic`.
  std::vector<int> order(const std::vector<int>& devs, int nic) {
    if (devs.size() <= 1) return devs;
    if (devs.size() > kMaxExhaustive) return greedy(devs, nic);
    std::vector<int> perm(devs.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::vector<int> best = perm;
    ChainScore bestScore;
    // With no NIC the ring is closed: fixing the first device removes rotations.
    auto first = nic < 0 ? perm.begin() + 1 : perm.begin();
    do {
      ChainScore s = score(devs, perm, nic);
      if (s.betterThan(bestScore)) {
        bestScore = s;
        best = perm;
      }
    } while (std::next_permutation(first, perm.end()));
    std::vector<int> out;
    for (int i : best) out.push_back(devs[i]);
    return out;
  }

 private:
  ChainScore score(const std::vector<int>& devs, const std::vector<int>& perm, int nic) {
    std::vector<int> seq;
    if (nic >= 0) seq.push_back(nic);
    for (int i : perm) seq.push_back(devs[i]);
    seq.push_back(nic >= 0 ? nic : devs[perm[0]]);
    HopList hops;
    ChainScore s;
    for (size_t i = 0; i + 1 < seq.size(); ++i) {
      const Path& p = router_.path(seq[i], seq[i + 1]);
      if (p.type == PathType::Dis) s.disconnected = true;
      s.typeSum += static_cast<int>(p.type);
      if (nic >= 0 && (i == 0 || i + 2 == seq.size())) s.nicLegTypes += static_cast<int>(p.type);
      appendPath(hops, p);
    }
    s.bw = soloBottleneck(sys_, hops, load_);
    return s;
  }

  std::vector<int> greedy(const std::vector<int>& devs, int nic) {
    std::vector<int> out;
    std::vector<bool> used(devs.size(), false);
    int at = nic;
    for (size_t step = 0; step < devs.size(); ++step) {
      int pick = -1;
      for (size_t i = 0; i < devs.size(); ++i) {
        if (used[i]) continue;
        if (at < 0) { pick = static_cast<int>(i); break; }
        const Path& p = router_.path(at, devs[i]);
        if (pick < 0) { pick = static_cast<int>(i); continue; }
        const Path& q = router_.path(at, devs[pick]);
        if (p.bw > q.bw || (p.bw == q.bw && p.type < q.type)) pick = static_cast<int>(i);
      }
      used[pick] = true;
      out.push_back(devs[pick]);
      at = devs[pick];
    }
    return out;
  }

  const System& sys_;
  Router& router_;
  std::vector<int> load_;
};

}  // namespace

std::vector<NicChoice> chooseNics(const System& sys, const std::vector<int>& devices) {
  std::vector<NicChoice> out;
  if (devices.empty()) return out;
  int host = sys.nodes.at(devices.front()).host;
  std::vector<int> nics;
  for (int n : sys.nodesOf(NodeKind::Nic, host))
    if (usableNic(sys.nodes[n])) nics.push_back(n);
  std::map<int, int> uses;
  for (int dev : devices) {
    NicChoice c;
    if (nics.empty()) {
      c.reason = "no usable NIC on this host (none up, or loopback only)";
      out.push_back(c);
      continue;
    }
    std::vector<int> tied;
    PathType bestType = PathType::Dis;
    double bestBw = -1;
    for (int nic : nics) {
      Path p = findPath(sys, dev, nic);
      double bw = std::min(p.bw, nicBw(sys, nic));
      if (p.type < bestType || (p.type == bestType && bw > bestBw)) {
        bestType = p.type;
        bestBw = bw;
        tied = {nic};
      } else if (p.type == bestType && bw == bestBw) {
        tied.push_back(nic);
      }
    }
    c.nic = tied.front();
    for (int nic : tied)
      if (uses[nic] < uses[c.nic]) c.nic = nic;
    ++uses[c.nic];
    c.type = bestType;
    c.bw = bestBw;
    char buf[320];
    snprintf(buf, sizeof buf, "%s: path %s at %g GB/s%s", describeNic(sys.nodes[c.nic]).c_str(), toString(c.type),
             c.bw,
             tied.size() > 1 ? ", tied with other NICs: least used by the devices before it"
                             : (nics.size() > 1 ? ", closest of the host's NICs" : ", the host's only usable NIC"));
    c.reason = buf;
    out.push_back(c);
  }
  return out;
}

HostChains hostChains(const System& sys, const std::vector<int>& devices, int nChannels, bool multiHost) {
  HostChains out;
  // The NICs the host spreads its channels over: those its devices choose.
  std::vector<int> nics;
  if (multiHost)
    for (const NicChoice& c : chooseNics(sys, devices))
      if (c.nic >= 0 && std::find(nics.begin(), nics.end(), c.nic) == nics.end()) nics.push_back(c.nic);
  std::sort(nics.begin(), nics.end());
  Router router(sys);
  HostOrderer orderer(sys, router);
  std::map<int, std::vector<int>> chainOfNic;
  for (int c = 0; c < nChannels; ++c) {
    const int nic = nics.empty() ? -1 : nics[c % nics.size()];
    if (!chainOfNic.count(nic)) chainOfNic[nic] = orderer.order(devices, nic);
    out.nics.push_back(nic);
    out.chains.push_back(chainOfNic[nic]);
  }
  return out;
}

double nicBandwidth(const System& sys, int nic) { return nicBw(sys, nic); }

double RingSet::totalBw() const {
  double t = 0;
  for (const auto& c : channels) t += c.bw;
  return t;
}

RingSet buildRings(const System& sys, const std::vector<RankPlace>& ranks, int nChannels) {
  if (nChannels < 1) raise(weftInvalidArgument, "topology: %d ring channels", nChannels);
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankPlace& p = ranks[r];
    if (p.device < 0 || p.device >= static_cast<int>(sys.nodes.size()) || sys.nodes[p.device].host != p.host ||
        (sys.nodes[p.device].kind != NodeKind::Gpu && sys.nodes[p.device].kind != NodeKind::Cpu))
      raise(weftInvalidArgument, "topology: rank %zu is not placed on a GPU or CPU of host %d", r, p.host);
  }
  RingSet set;
  // Per host: its devices in order of their first rank, and each device's ranks.
  std::map<int, std::vector<int>> hostDevices;
  std::map<int, std::vector<int>> deviceRanks;
  for (size_t r = 0; r < ranks.size(); ++r) {
    auto& devs = hostDevices[ranks[r].host];
    if (std::find(devs.begin(), devs.end(), ranks[r].device) == devs.end()) devs.push_back(ranks[r].device);
    deviceRanks[ranks[r].device].push_back(static_cast<int>(r));
  }
  for (const auto& [h, devs] : hostDevices) set.hosts.push_back(h);
  const bool multiHost = set.hosts.size() > 1;

  // Each host's chains depend on that host alone (its devices and NICs), so
  // a communicator can compute them per host and combine (comm_topo.h).
  std::map<int, HostChains> hostChain;
  for (int h : set.hosts) hostChain[h] = hostChains(sys, hostDevices[h], nChannels, multiHost);

  Router router(sys);
  std::vector<HopList> channelHops(nChannels);
  std::vector<int> load(sys.links.size() * 2, 0);
  bool anyDisconnected = false;
  std::vector<bool> disconnected(nChannels, false);

  for (int c = 0; c < nChannels; ++c) {
    RingChannel ch;
    std::vector<std::vector<int>> chains;
    for (int h : set.hosts) {
      const int nic = hostChain[h].nics[c];
      chains.push_back(hostChain[h].chains[c]);
      ch.nics.push_back(nic);
      for (int dev : chains.back())
        for (int r : deviceRanks[dev]) ch.order.push_back(r);
    }
    HopList& hops = channelHops[c];
    auto use = [&](int from, int to, bool nicLeg) {
      const Path& p = router.path(from, to);
      if (p.type == PathType::Dis) disconnected[c] = anyDisconnected = true;
      if (nicLeg) ch.nicType = worse(ch.nicType, p.type);
      else if (sys.nodes[from].host == sys.nodes[to].host) ch.intraType = worse(ch.intraType, p.type);
      appendPath(hops, p);
    };
    for (size_t i = 0; i < chains.size(); ++i) {
      const auto& chain = chains[i];
      for (size_t d = 0; d + 1 < chain.size(); ++d) use(chain[d], chain[d + 1], false);
      size_t next = (i + 1) % chains.size();
      int last = chain.back(), first = chains[next].front();
      if (!multiHost) {
        if (chain.size() > 1) use(last, first, false);
        continue;
      }
      int nicOut = ch.nics[i], nicIn = ch.nics[next];
      if (nicOut < 0 || nicIn < 0) {
        use(last, first, false);
        continue;
      }
      use(last, nicOut, true);
      use(nicOut, nicIn, false);
      use(nicIn, first, true);
    }
    for (int h : hops) ++load[h];
    set.channels.push_back(std::move(ch));
  }
  for (int c = 0; c < nChannels; ++c) {
    double bw = kLocalBw;
    for (int h : channelHops[c]) bw = std::min(bw, sys.links[h / 2].bw / load[h]);
    set.channels[c].bw = disconnected[c] ? 0 : bw;
  }
  (void)anyDisconnected;
  return set;
}

TreeInputs treeInputs(const RingSet& rings, const std::vector<RankPlace>& ranks, int channel) {
  TreeInputs t;
  if (rings.channels.empty()) return t;
  const RingChannel& ch = rings.channels.at(channel);
  t.hosts = rings.hosts;
  t.nics = ch.nics;
  t.chains.resize(rings.hosts.size());
  for (int r : ch.order) {
    auto pos = std::find(rings.hosts.begin(), rings.hosts.end(), ranks[r].host) - rings.hosts.begin();
    t.chains[pos].push_back(r);
  }
  return t;
}

TopoSummary summarize(const System& sys, const std::vector<RankPlace>& ranks, int nChannels) {
  TopoSummary s;
  RingSet rings = buildRings(sys, ranks, nChannels);
  s.nHosts = static_cast<int>(rings.hosts.size());
  s.nChannels = nChannels;
  std::map<int, int> perHost;
  for (const auto& p : ranks) s.maxRanksPerHost = std::max(s.maxRanksPerHost, ++perHost[p.host]);
  for (const auto& p : ranks) s.hostMemoryRanks = s.hostMemoryRanks || sys.nodes[size_t(p.device)].kind != NodeKind::Gpu;
  s.ringBwPerChannel = rings.channels.empty() ? 0 : kLocalBw;
  for (const auto& c : rings.channels) {
    s.ringBwPerChannel = std::min(s.ringBwPerChannel, c.bw);
    s.intraType = worse(s.intraType, c.intraType);
    s.nicType = worse(s.nicType, c.nicType);
    for (int nic : c.nics)
      if (nic >= 0) s.interHostBw = s.interHostBw == 0 ? nicBw(sys, nic) : std::min(s.interHostBw, nicBw(sys, nic));
    if (s.nHosts > 1) s.hostNicBw.resize(c.nics.size(), 0);
    for (size_t h = 0; s.nHosts > 1 && h < c.nics.size(); h++)
      if (const int nic = c.nics[h]; nic >= 0)
        s.hostNicBw[h] = s.hostNicBw[h] == 0 ? nicBw(sys, nic) : std::min(s.hostNicBw[h], nicBw(sys, nic));
  }
  // Inside the hosts alone, as a communicator's views give it (hostRingViews).
  if (nChannels <= kMaxViewChannels && !rings.channels.empty()) {
    std::map<int, std::vector<RankPlace>> perHostPlaces;
    for (const auto& p : ranks) perHostPlaces[p.host].push_back(p);
    s.ringHostBwPerChannel = kLocalBw;
    for (const auto& [h, places] : perHostPlaces) {
      const HostRingView v = hostRingViews(sys, places, nChannels, s.nHosts > 1).front();
      for (int c = 0; c < nChannels; ++c) s.ringHostBwPerChannel = std::min<double>(s.ringHostBwPerChannel, v.hostBw[c]);
    }
  }
  return s;
}

std::vector<RankPlace> defaultPlaces(const System& sys, bool useGpus, int ranksPerHost) {
  std::vector<RankPlace> out;
  for (size_t h = 0; h < sys.hosts.size(); ++h) {
    int host = static_cast<int>(h);
    auto devs = sys.nodesOf(useGpus ? NodeKind::Gpu : NodeKind::Cpu, host);
    if (devs.empty()) continue;
    int n = useGpus ? static_cast<int>(devs.size()) : (ranksPerHost > 0 ? ranksPerHost : static_cast<int>(devs.size()));
    for (int i = 0; i < n; ++i) out.push_back({host, devs[i % devs.size()]});
  }
  return out;
}

const char* transportFor(const System& sys, const RankPlace& a, const RankPlace& b) {
  if (a.host != b.host) return "net";
  const Node& x = sys.nodes.at(a.device);
  const Node& y = sys.nodes.at(b.device);
  if (a.device == b.device || x.kind != NodeKind::Gpu || y.kind != NodeKind::Gpu) return "shm";
  if (std::find(x.noP2p.begin(), x.noP2p.end(), y.id) != x.noP2p.end() ||
      std::find(y.noP2p.begin(), y.noP2p.end(), x.id) != y.noP2p.end())
    return "shm";
  PathType t = findPath(sys, a.device, b.device).type;
  // P2P across the CPU's host bridge or the SMP link is often slow or
  // blocked (ACS, IOMMU); staging through host memory is safer there.
  return t <= PathType::Pxb ? "p2p" : "shm";
}

}  // namespace weft::topo
