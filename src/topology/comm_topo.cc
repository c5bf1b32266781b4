#include "src/topology/comm_topo.h"

#include <algorithm>
#include <map>
#include <string>

#include "src/topology/paths.h"
#include "src/util/error.h"

namespace weft::topo {

RankPlace placeRank(const System& sys, int host, int cudaDev, int numa, int localIndex) {
  if (cudaDev >= 0)
    for (int g : sys.nodesOf(NodeKind::Gpu, host))
      if (sys.nodes[g].cudaDev == cudaDev) return {host, g};
  std::vector<int> cpus = sys.nodesOf(NodeKind::Cpu, host);
  if (cpus.empty()) raise(weftInvalidArgument, "topology: host %d has no CPU node to place a rank on", host);
  for (int c : cpus)
    if (sys.nodes[c].numa == numa) return {host, c};
  return {host, cpus[static_cast<size_t>(std::max(localIndex, 0)) % cpus.size()]};
}

namespace {

PathType worse(PathType a, PathType b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }

}  // namespace

std::vector<HostRingView> hostRingViews(const System& sys, const std::vector<RankPlace>& hostRanks, int nChannels,
                                        bool multiHost) {
  if (nChannels < 1 || nChannels > kMaxViewChannels)
    raise(weftInvalidArgument, "topology: %d channels (at most %d)", nChannels, kMaxViewChannels);
  std::vector<HostRingView> views(hostRanks.size());
  if (hostRanks.empty()) return views;
  std::vector<int> devices;
  std::map<int, std::vector<int>> ranksOfDevice;  // device -> indices into hostRanks, ascending
  for (size_t i = 0; i < hostRanks.size(); ++i) {
    const int dev = hostRanks[i].device;
    if (std::find(devices.begin(), devices.end(), dev) == devices.end()) devices.push_back(dev);
    ranksOfDevice[dev].push_back(static_cast<int>(i));
  }
  HostChains hc = hostChains(sys, devices, nChannels, multiHost);

  // Directed link loads (link * 2 + direction) over all channels, and each
  // NIC's use: a channel leaves through it and enters through it, once each way.
  std::vector<std::vector<int>> hops(nChannels);
  std::vector<int> load(sys.links.size() * 2, 0);
  std::map<int, int> nicUses;
  PathType intraType = PathType::Loc, nicType = PathType::Loc;
  for (int c = 0; c < nChannels; ++c) {
    const std::vector<int>& chain = hc.chains[c];
    const int nic = hc.nics[c];
    auto use = [&](int from, int to, bool nicLeg) {
      Path p = findPath(sys, from, to);
      if (nicLeg) nicType = worse(nicType, p.type);
      else intraType = worse(intraType, p.type);
      for (const Hop& h : p.hops) hops[c].push_back(h.link * 2 + (h.forward ? 0 : 1));
    };
    for (size_t d = 0; d + 1 < chain.size(); ++d) use(chain[d], chain[d + 1], false);
    if (nic >= 0) {
      use(chain.back(), nic, true);
      use(nic, chain.front(), true);
      ++nicUses[nic];
    } else if (!multiHost && chain.size() > 1) {
      use(chain.back(), chain.front(), false);
    }
    for (int h : hops[c]) ++load[h];
  }
  float slowestNic = 0;
  for (const auto& [nic, uses] : nicUses) {
    (void)uses;
    const float bw = static_cast<float>(nicBandwidth(sys, nic));
    slowestNic = slowestNic == 0 ? bw : std::min(slowestNic, bw);
  }
  for (int c = 0; c < nChannels; ++c) {
    double bw = kLocalBw;
    for (int h : hops[c]) bw = std::min(bw, sys.links[h / 2].bw / load[h]);
    const double inHost = bw;
    if (hc.nics[c] >= 0) bw = std::min(bw, nicBandwidth(sys, hc.nics[c]) / nicUses[hc.nics[c]]);
    int pos = 0;
    for (int dev : hc.chains[c])
      for (int i : ranksOfDevice[dev]) views[i].pos[c] = static_cast<int16_t>(pos++);
    for (auto& v : views) v.bw[c] = static_cast<float>(bw), v.hostBw[c] = static_cast<float>(inHost);
  }
  int8_t hostMemory = 0;
  for (int dev : devices) hostMemory |= sys.nodes[size_t(dev)].kind != NodeKind::Gpu ? 1 : 0;
  for (auto& v : views) {
    v.hostMemory = hostMemory;
    v.nicBw = slowestNic;
    v.intraType = static_cast<int8_t>(intraType);
    v.nicType = static_cast<int8_t>(nicType);
  }
  return views;
}

CommRings composeRings(const std::vector<int>& hostOf, const std::vector<HostRingView>& views, int nChannels) {
  if (hostOf.size() != views.size() || hostOf.empty())
    raise(weftInvalidArgument, "topology: %zu host ids for %zu views", hostOf.size(), views.size());
  if (nChannels < 1 || nChannels > kMaxViewChannels)
    raise(weftInvalidArgument, "topology: %d channels (at most %d)", nChannels, kMaxViewChannels);
  const int n = static_cast<int>(hostOf.size());
  CommRings out;
  TopoSummary& s = out.summary;
  std::map<int, std::vector<int>> members;  // host -> ranks, ascending
  for (int r = 0; r < n; ++r) members[hostOf[r]].push_back(r);
  s.nHosts = static_cast<int>(members.size());
  s.nChannels = nChannels;
  s.ringBwPerChannel = s.ringHostBwPerChannel = kLocalBw;
  for (const auto& [h, ranks] : members) {
    s.maxRanksPerHost = std::max(s.maxRanksPerHost, static_cast<int>(ranks.size()));
    const HostRingView& v = views[ranks.front()];
    if (s.nHosts > 1 && v.nicBw > 0) s.interHostBw = s.interHostBw == 0 ? v.nicBw : std::min<double>(s.interHostBw, v.nicBw);
    if (s.nHosts > 1) s.hostNicBw.push_back(v.nicBw);
    s.intraType = worse(s.intraType, static_cast<PathType>(v.intraType));
    s.hostMemoryRanks = s.hostMemoryRanks || v.hostMemory != 0;
    if (s.nHosts > 1) s.nicType = worse(s.nicType, static_cast<PathType>(v.nicType));
    for (int c = 0; c < nChannels; ++c) {
      s.ringBwPerChannel = std::min<double>(s.ringBwPerChannel, v.bw[c]);
      s.ringHostBwPerChannel = std::min<double>(s.ringHostBwPerChannel, v.hostBw[c]);
    }
  }
  for (int c = 0; c < nChannels; ++c) {
    std::vector<int> order;
    for (const auto& [h, ranks] : members) {
      std::vector<int> chain = ranks;
      // A view that is not a permutation of 0..k-1 (ranks disagreeing about
      // their host's topology) would give a broken ring: refuse it.
      std::vector<int> seen(chain.size(), 0);
      for (int r : ranks) {
        const int p = views[r].pos[c];
        if (p < 0 || p >= static_cast<int>(chain.size()) || seen[p]++)
          raise(weftInvalidUsage,
                "topology: the ranks of host %d disagree about their ring positions (same WEFT_TOPO_FILE on all?)", h);
        chain[p] = r;
      }
      order.insert(order.end(), chain.begin(), chain.end());
    }
    out.orders.push_back(std::move(order));
  }
  return out;
}

const char* toString(PeerTopoKind k) {
  switch (k) {
    case PeerTopoKind::P2p: return "p2p";
    case PeerTopoKind::Shm: return "shm";
    case PeerTopoKind::Net: return "net";
    case PeerTopoKind::Unknown: break;
  }
  return "unknown";
}

PeerTopoKind peerTopoKind(const System& sys, const RankPlace& a, const RankPlace& b) {
  const std::string kind = transportFor(sys, a, b);
  if (kind == "p2p") return PeerTopoKind::P2p;
  if (kind == "shm") return PeerTopoKind::Shm;
  if (kind == "net") return PeerTopoKind::Net;
  return PeerTopoKind::Unknown;
}

}  // namespace weft::topo
