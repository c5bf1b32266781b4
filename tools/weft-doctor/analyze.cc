#include "tools/weft-doctor/analyze.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "tools/weft-doctor/counters.h"

namespace weft::doctor {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The rank named in "no usable IB on rank N", or -1.
int blamedRank(const std::string& why, int self) {
  if (why.find("no usable IB on this rank") != std::string::npos) return self;
  const std::string key = "no usable IB on rank ";
  const size_t at = why.find(key);
  return at == std::string::npos ? -1 : std::atoi(why.c_str() + at + key.size());
}

}  // namespace

std::vector<Finding> transportFindings(const Result& r) {
  std::vector<Finding> out;
  auto hostOf = [&r](int rank) { return rank >= 0 && rank < int(r.ranks.size()) ? r.ranks[size_t(rank)].host : -1; };
  // Same host, not shared memory: one finding per host, with the first reason.
  std::map<int, std::pair<int, const PairTransport*>> sameHost;  // host -> (pairs, example)
  std::map<int, std::string> noRdma;                              // host -> reason
  int netPairs = 0, tcpPairs = 0;
  const PairTransport* tcpExample = nullptr;
  for (const PairTransport& t : r.transports) {
    if (t.sameHost) {
      if (t.transport != "SHM") {
        auto& e = sameHost[hostOf(t.a)];
        if (!e.second) e.second = &t;
        e.first++;
      }
      continue;
    }
    netPairs++;
    if (!t.lastResort) continue;
    if (!tcpPairs++) tcpExample = &t;
    const int blamed = blamedRank(t.why, t.a);
    if (blamed >= 0 && !noRdma.count(hostOf(blamed))) noRdma[hostOf(blamed)] = t.why;
  }
  for (const auto& [host, e] : sameHost) {
    const std::string name = hostName(r, host);
    out.push_back({"transport", name,
                   name + ": " + std::to_string(e.first) + " same-host rank pair(s) use " +
                       (e.second->transport.empty() ? "no transport" : e.second->transport) +
                       ", not shared memory (ranks " + std::to_string(e.second->a) + " and " +
                       std::to_string(e.second->b) + ": " + e.second->why + ")"});
  }
  if (tcpPairs == 0) return out;
  // Named hosts only where other pairs do better: when no pair of hosts has
  // RDMA, the cluster has none (or it is unusable everywhere): one line.
  if (tcpPairs == netPairs || noRdma.empty()) {
    out.push_back({"transport", "all hosts",
                   std::to_string(tcpPairs) + " of " + std::to_string(netPairs) +
                       " inter-host rank pairs use TCP (Socket)" +
                       (tcpPairs == netPairs ? ", none RDMA" : "") + " (ranks " + std::to_string(tcpExample->a) +
                       " and " + std::to_string(tcpExample->b) + ": " + tcpExample->why + ")"});
    return out;
  }
  for (const auto& [host, why] : noRdma) {
    const std::string name = hostName(r, host);
    out.push_back({"transport", name, name + ": falls back to TCP (Socket) where other hosts use RDMA: " + why});
  }
  return out;
}

std::vector<Finding> linkFindings(const Result& r) {
  std::vector<Finding> out;
  std::vector<double> bws, lats;
  std::map<std::pair<int, int>, const Link*> byPair;
  for (const Link& l : r.links) {
    if (l.from == l.to) continue;
    bws.push_back(l.gbps);
    lats.push_back(l.latUs);
    byPair[{l.from, l.to}] = &l;
  }
  const double medBw = median(bws), medLat = median(lats);
  for (const auto& [pair, l] : byPair) {
    const std::string name = linkName(r, *l);
    if (medBw > 0 && l->gbps < kSlowLinkShare * medBw)
      out.push_back({"slow_link", name,
                     "link " + name + ": " + fmt("%.3f", l->gbps) + " GB/s, under half the median link (" +
                         fmt("%.3f", medBw) + " GB/s)"});
    if (medLat > 0 && l->latUs > 2 * medLat + 20)
      out.push_back({"slow_latency", name,
                     "link " + name + ": latency " + fmt("%.1f", l->latUs) + " us, median " + fmt("%.1f", medLat) +
                         " us"});
    auto back = byPair.find({pair.second, pair.first});
    if (pair.first < pair.second && back != byPair.end()) {
      const double fw = l->gbps, bw = back->second->gbps;
      if (std::min(fw, bw) > 0 && std::max(fw, bw) > kAsymmetry * std::min(fw, bw)) {
        const Link* slow = fw < bw ? l : back->second;
        out.push_back({"asymmetric_link", linkName(r, *slow),
                       "link " + hostName(r, pair.first) + " <-> " + hostName(r, pair.second) + " is asymmetric: " +
                           name + " " + fmt("%.3f", fw) + " GB/s, " + linkName(r, *back->second) + " " +
                           fmt("%.3f", bw) + " GB/s (slow way: " + linkName(r, *slow) + ")"});
      }
    }
  }
  return out;
}

std::vector<Finding> analyze(const Result& r) {
  std::vector<Finding> all = transportFindings(r);
  for (auto* part : {linkFindings, counterFindings}) {
    std::vector<Finding> more = part(r);
    all.insert(all.end(), more.begin(), more.end());
  }
  return all;
}

std::vector<std::vector<std::pair<int, int>>> pairRounds(int nHosts) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (nHosts < 2) return rounds;
  // The circle method: host 0 (or the idle slot) stays, the others rotate.
  const int n = nHosts % 2 ? nHosts + 1 : nHosts;
  std::vector<int> ring(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) ring[size_t(i)] = i;
  for (int round = 0; round < n - 1; round++) {
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < n / 2; i++) {
      const int a = ring[size_t(i)], b = ring[size_t(n - 1 - i)];
      if (a < nHosts && b < nHosts) pairs.push_back({std::min(a, b), std::max(a, b)});
    }
    rounds.push_back(pairs);
    std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());
  }
  return rounds;
}

}  // namespace weft::doctor
