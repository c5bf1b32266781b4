#include "src/sim/cluster.h"

#include <algorithm>
#include <cmath>

#include "src/util/error.h"

namespace weft::sim {

int Cluster::addLink(double gbs, double latUs, std::string name) {
  linkGBs.push_back(gbs);
  linkLatUs.push_back(latUs);
  linkName.push_back(std::move(name));
  return int(linkGBs.size()) - 1;
}

int Cluster::hosts() const { return hostOf.empty() ? 0 : *std::max_element(hostOf.begin(), hostOf.end()) + 1; }

void Cluster::addRankNics(int localRank, const std::vector<ib::NicCandidate>& ports) {
  ib::NicChoice choice;
  if (!ports.empty()) {
    ib::NicChoiceInput in;
    in.ports = ports;
    in.localRank = localRank;
    choice = ib::chooseNics(in);
    choice.reason.clear();  // one per rank, never read here
  }
  rankNics.push_back(std::move(choice));
}

int Cluster::nicOf(int r, int conn) const {
  const ib::NicChoice& c = rankNics[size_t(r)];
  return c.rails.empty() ? -1 : hostNics[size_t(hostOf[size_t(r)])][size_t(ib::nicForChannel(c, conn))];
}

const std::vector<int>* Cluster::via(int a, int b) const {
  if (localOf.empty()) return nullptr;
  const auto& pairs = hostVia[size_t(hostOf[size_t(a)])];
  if (pairs.empty()) return nullptr;
  const auto ranks = size_t(std::lround(std::sqrt(double(pairs.size()))));
  const auto& v = pairs[size_t(localOf[size_t(a)]) * ranks + size_t(localOf[size_t(b)])];
  return v.empty() ? nullptr : &v;
}

void Cluster::route(int a, int b, int conn, std::vector<int>* links) const {
  if (hostOf[size_t(a)] == hostOf[size_t(b)]) {
    links->push_back(rankOut[size_t(a)]);
    if (const std::vector<int>* v = via(a, b)) links->insert(links->end(), v->begin(), v->end());
    links->push_back(rankIn[size_t(b)]);
    return;
  }
  const int na = nicOf(a, conn), nb = nicOf(b, conn);
  links->push_back(nicUp[size_t(na)]);
  const int sa = nicSwitch[size_t(na)], sb = nicSwitch[size_t(nb)];
  if (sa >= 0 && sb >= 0 && sa != sb) {
    const auto& r = switchRoute[size_t(sa) * size_t(nSwitches) + size_t(sb)];
    links->insert(links->end(), r.begin(), r.end());
  }
  links->push_back(nicDown[size_t(nb)]);
}

Cluster buildCluster(const SimpleCluster& s) {
  Cluster c;
  const int nics = std::max(s.nicsPerHost, 1);
  for (size_t h = 0; h < s.layout.size(); h++) {
    // The host's NICs, at the same speed and distance from every rank.
    std::vector<ib::NicCandidate> ports;
    c.hostNics.emplace_back();
    for (int k = 0; k < nics; k++) {
      const std::string name = "host" + std::to_string(h) + ".nic" + std::to_string(k);
      c.hostNics.back().push_back(int(c.nicUp.size()));
      c.nicUp.push_back(c.addLink(s.nicGBs, s.netLatUs, name + ".up"));
      c.nicDown.push_back(c.addLink(s.nicGBs, 0, name + ".down"));
      c.nicHost.push_back(int(h));
      c.nicSwitch.push_back(-1);
      ports.push_back({name, ib::LinkLayer::Unknown, int(s.nicGBs * 8000), std::nullopt});
    }
    for (int l = 0; l < s.layout[h]; l++) {
      const int r = int(c.hostOf.size());
      c.hostOf.push_back(int(h));
      c.rankOut.push_back(c.addLink(s.intraGBs, s.intraLatUs, "rank" + std::to_string(r) + ".out"));
      c.rankIn.push_back(c.addLink(s.intraGBs, 0, "rank" + std::to_string(r) + ".in"));
      c.addRankNics(l, ports);
    }
  }
  c.stepOverheadUs = s.stepOverheadUs;
  return c;
}

void validate(const Cluster& c) {
  const size_t n = c.hostOf.size();
  if (c.rankOut.size() != n || c.rankIn.size() != n || c.rankNics.size() != n)
    raise(weftInvalidArgument, "sim: the cluster's per-rank tables do not have %zu entries", n);
  for (size_t r = 0; r < n; r++)
    for (int rail : c.rankNics[r].rails)
      if (c.hostOf[r] < 0 || size_t(c.hostOf[r]) >= c.hostNics.size() || rail < 0 ||
          size_t(rail) >= c.hostNics[size_t(c.hostOf[r])].size())
        raise(weftInvalidArgument, "sim: rank %zu's NIC %d is not one of its host's", r, rail);
  for (size_t i = 0; i < c.linkGBs.size(); i++) {
    if (!(c.linkGBs[i] > 0) || !std::isfinite(c.linkGBs[i]))
      raise(weftInvalidArgument, "sim: link %s has bandwidth %g (must be above 0)", c.linkName[i].c_str(), c.linkGBs[i]);
    if (!(c.linkLatUs[i] >= 0))
      raise(weftInvalidArgument, "sim: link %s has a negative latency", c.linkName[i].c_str());
  }
  for (size_t r = 0; r < n; r++)
    if (c.hostOf[r] < 0) raise(weftInvalidArgument, "sim: rank %zu has host index %d", r, c.hostOf[r]);
  if (!c.localOf.empty()) {
    std::vector<size_t> ranks(c.hostVia.size(), 0);
    for (size_t r = 0; r < n; r++) {
      if (size_t(c.hostOf[r]) >= ranks.size())
        raise(weftInvalidArgument, "sim: rank %zu's host %d has no in-host routes", r, c.hostOf[r]);
      ranks[size_t(c.hostOf[r])]++;
    }
    if (c.localOf.size() != n) raise(weftInvalidArgument, "sim: the cluster's local indices do not have %zu entries", n);
    for (size_t h = 0; h < c.hostVia.size(); h++) {
      if (!c.hostVia[h].empty() && c.hostVia[h].size() != ranks[h] * ranks[h])
        raise(weftInvalidArgument, "sim: host %zu's in-host routes are not one per pair of its ranks", h);
      for (const auto& v : c.hostVia[h])
        for (int l : v)
          if (l < 0 || size_t(l) >= c.linkGBs.size()) raise(weftInvalidArgument, "sim: an in-host route crosses no link");
    }
  }
  if (!(c.stepOverheadUs >= 0)) raise(weftInvalidArgument, "sim: a negative per-step overhead");
}

}  // namespace weft::sim
