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

void Cluster::route(int a, int b, std::vector<int>* links) const {
  if (hostOf[size_t(a)] == hostOf[size_t(b)]) {
    links->push_back(rankOut[size_t(a)]);
    links->push_back(rankIn[size_t(b)]);
    return;
  }
  const int na = rankNic[size_t(a)], nb = rankNic[size_t(b)];
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
    for (int l = 0; l < s.layout[h]; l++) {
      const int r = int(c.hostOf.size());
      c.hostOf.push_back(int(h));
      c.rankOut.push_back(c.addLink(s.intraGBs, s.intraLatUs, "rank" + std::to_string(r) + ".out"));
      c.rankIn.push_back(c.addLink(s.intraGBs, 0, "rank" + std::to_string(r) + ".in"));
      c.rankNic.push_back(int(h) * nics + l % nics);
    }
    for (int k = 0; k < nics; k++) {
      const std::string name = "host" + std::to_string(h) + ".nic" + std::to_string(k);
      c.nicUp.push_back(c.addLink(s.nicGBs, s.netLatUs, name + ".up"));
      c.nicDown.push_back(c.addLink(s.nicGBs, 0, name + ".down"));
      c.nicHost.push_back(int(h));
      c.nicSwitch.push_back(-1);
    }
  }
  c.stepOverheadUs = s.stepOverheadUs;
  return c;
}

void validate(const Cluster& c) {
  const size_t n = c.hostOf.size();
  if (c.rankOut.size() != n || c.rankIn.size() != n || c.rankNic.size() != n)
    raise(weftInvalidArgument, "sim: the cluster's per-rank tables do not have %zu entries", n);
  for (size_t i = 0; i < c.linkGBs.size(); i++) {
    if (!(c.linkGBs[i] > 0) || !std::isfinite(c.linkGBs[i]))
      raise(weftInvalidArgument, "sim: link %s has bandwidth %g (must be above 0)", c.linkName[i].c_str(), c.linkGBs[i]);
    if (!(c.linkLatUs[i] >= 0))
      raise(weftInvalidArgument, "sim: link %s has a negative latency", c.linkName[i].c_str());
  }
  for (size_t r = 0; r < n; r++)
    if (c.hostOf[r] < 0) raise(weftInvalidArgument, "sim: rank %zu has host index %d", r, c.hostOf[r]);
  if (!(c.stepOverheadUs >= 0)) raise(weftInvalidArgument, "sim: a negative per-step overhead");
}

}  // namespace weft::sim
