#include "src/sim/symmetry.h"

#include <algorithm>
#include <numeric>

namespace weft::sim {
namespace {

// The shift's action on the links, built rank by rank; fails on the first
// link that would map onto one of another bandwidth or latency, or onto two
// links, or two links onto one.
class LinkMapper {
 public:
  explicit LinkMapper(const Cluster& c) : c_(c), image_(c.linkGBs.size(), -1), preimage_(c.linkGBs.size(), -1) {}

  bool map(int a, int b) {
    if (a < 0 || b < 0) return a == b;
    if (image_[size_t(a)] >= 0) return image_[size_t(a)] == b;
    if (preimage_[size_t(b)] >= 0) return false;
    if (c_.linkGBs[size_t(a)] != c_.linkGBs[size_t(b)] || c_.linkLatUs[size_t(a)] != c_.linkLatUs[size_t(b)])
      return false;
    image_[size_t(a)] = b;
    preimage_[size_t(b)] = a;
    return true;
  }
  const std::vector<int>& image() const { return image_; }

 private:
  const Cluster& c_;
  std::vector<int> image_, preimage_;
};

// A map between small index sets (hosts, NICs, switches) that must stay a
// bijection: -1 maps to -1 only.
class IndexMap {
 public:
  explicit IndexMap(size_t n) : to_(n, -1), from_(n, -1) {}
  bool map(int a, int b) {
    if (a < 0 || b < 0) return a == b;
    if (size_t(a) >= to_.size() || size_t(b) >= to_.size()) return false;
    if (to_[size_t(a)] >= 0) return to_[size_t(a)] == b;
    if (from_[size_t(b)] >= 0) return false;
    to_[size_t(a)] = b;
    from_[size_t(b)] = a;
    return true;
  }
  int operator[](int a) const { return to_[size_t(a)]; }

 private:
  std::vector<int> to_, from_;
};

// The in-host routes between ranks that are not peer-to-peer (hostVia),
// pair onto pair under the permutation `to`.
bool viaImage(const Cluster& c, const std::vector<int>& to, LinkMapper& links) {
  std::vector<std::vector<int>> members(c.hostVia.size());
  for (size_t r = 0; r < c.hostOf.size(); r++) members[size_t(c.hostOf[r])].push_back(int(r));
  for (size_t r = 0; r < c.hostOf.size(); r++) {
    const int s = to[r];
    if (c.hostVia[size_t(c.hostOf[r])].empty() != c.hostVia[size_t(c.hostOf[size_t(s)])].empty()) return false;
    if (c.hostVia[size_t(c.hostOf[r])].empty()) continue;
    for (int r2 : members[size_t(c.hostOf[r])]) {
      if (r2 == int(r)) continue;
      const std::vector<int>* a = c.via(int(r), r2);
      const std::vector<int>* b = c.via(s, to[size_t(r2)]);
      if (!a || !b) {
        if (a != b) return false;
        continue;
      }
      if (a->size() != b->size()) return false;
      for (size_t k = 0; k < a->size(); k++)
        if (!links.map((*a)[k], (*b)[k])) return false;
    }
  }
  return true;
}

// The rank permutation `to` as a map of the links every route can cross,
// or an empty vector when it does not map the cluster onto itself.
std::vector<int> linkImage(const Cluster& c, const std::vector<int>& to) {
  const int n = int(c.hostOf.size());
  LinkMapper links(c);
  IndexMap hosts(c.hostOf.size()), nics(c.nicUp.size()), switches(size_t(c.nSwitches));
  std::vector<int> usedSwitches;
  for (int r = 0; r < n; r++) {
    const int s = to[size_t(r)];
    if (!hosts.map(c.hostOf[size_t(r)], c.hostOf[size_t(s)]) || !links.map(c.rankOut[size_t(r)], c.rankOut[size_t(s)]) ||
        !links.map(c.rankIn[size_t(r)], c.rankIn[size_t(s)]))
      return {};
    // Every connection's NIC: rail k of r onto rail k of s.
    const auto& ra = c.rankNics[size_t(r)].rails;
    const auto& rb = c.rankNics[size_t(s)].rails;
    if (ra.size() != rb.size()) return {};
    for (size_t k = 0; k < ra.size(); k++) {
      const int a = c.hostNics[size_t(c.hostOf[size_t(r)])][size_t(ra[k])];
      const int b = c.hostNics[size_t(c.hostOf[size_t(s)])][size_t(rb[k])];
      if (!nics.map(a, b) || !links.map(c.nicUp[size_t(a)], c.nicUp[size_t(b)]) ||
          !links.map(c.nicDown[size_t(a)], c.nicDown[size_t(b)]))
        return {};
      const int sa = c.nicSwitch[size_t(a)], sb = c.nicSwitch[size_t(b)];
      if (!switches.map(sa, sb)) return {};
      if (sa >= 0) usedSwitches.push_back(sa);
    }
  }
  if (!c.localOf.empty() && !viaImage(c, to, links)) return {};
  std::sort(usedSwitches.begin(), usedSwitches.end());
  usedSwitches.erase(std::unique(usedSwitches.begin(), usedSwitches.end()), usedSwitches.end());
  const size_t ns = size_t(c.nSwitches);
  for (int a : usedSwitches)
    for (int b : usedSwitches) {
      if (a == b) continue;
      const auto& from = c.switchRoute[size_t(a) * ns + size_t(b)];
      const auto& to2 = c.switchRoute[size_t(switches[a]) * ns + size_t(switches[b])];
      if (from.size() != to2.size()) return {};
      for (size_t k = 0; k < from.size(); k++)
        if (!links.map(from[k], to2[k])) return {};
    }
  return links.image();
}

// Ranks per host when every host has the same number, numbered host by
// host; 0 otherwise.
int evenHostRanks(const Cluster& c) {
  const int n = int(c.hostOf.size());
  int L = 0;
  while (L < n && c.hostOf[size_t(L)] == c.hostOf[0]) L++;
  if (n % L) return 0;
  for (int r = 0; r < n; r++)
    if (c.hostOf[size_t(r)] != c.hostOf[size_t(r - r % L)] || (r % L == 0 && r > 0 && c.hostOf[size_t(r)] == c.hostOf[size_t(r - 1)]))
      return 0;
  return L;
}

int findRoot(std::vector<int>& up, int x) {
  while (up[size_t(x)] != x) x = up[size_t(x)] = up[size_t(up[size_t(x)])];
  return x;
}

// Orbits of the links under the generators' link maps (union-find); the
// representative is the orbit's lowest link.
void linkOrbits(RankSymmetry& s, const std::vector<std::vector<int>>& images) {
  std::vector<int> up(s.linkRep.size());
  std::iota(up.begin(), up.end(), 0);
  for (const auto& image : images)
    for (size_t l = 0; l < image.size(); l++)
      if (image[l] >= 0) {
        const int a = findRoot(up, int(l)), b = findRoot(up, image[l]);
        if (a != b) up[size_t(std::max(a, b))] = std::min(a, b);
      }
  std::vector<int> size(up.size(), 0);
  for (size_t l = 0; l < up.size(); l++) size[size_t(findRoot(up, int(l)))]++;
  for (size_t l = 0; l < up.size(); l++) {
    const int root = findRoot(up, int(l));
    s.linkRep[l] = root;
    s.linkWeight[l] = s.copies() / size[size_t(root)];
  }
}

}  // namespace

int RankSymmetry::moveLike(int r, int x) const {
  const int a = r / period, b = r % period % rotate;
  const int y = x - x % rotate + (x % rotate + b) % rotate;
  return int((int64_t(y) + int64_t(a) * period) % nranks);
}

int RankSymmetry::moveBackLike(int r, int x) const {
  const int a = r / period, b = r % period % rotate;
  const int y = int((int64_t(x) + nranks - int64_t(a) * period % nranks) % nranks);
  return y - y % rotate + (y % rotate + rotate - b) % rotate;
}

RankSymmetry noSymmetry(const Cluster& c) {
  RankSymmetry s;
  s.nranks = s.period = int(c.hostOf.size());
  s.linkRep.resize(c.linkGBs.size());
  std::iota(s.linkRep.begin(), s.linkRep.end(), 0);
  s.linkWeight.assign(c.linkGBs.size(), 1);
  return s;
}

RankSymmetry findSymmetry(const Cluster& c, bool withShift, bool withRotation) {
  RankSymmetry s = noSymmetry(c);
  const int n = s.nranks;
  std::vector<std::vector<int>> images;
  std::vector<int> to(static_cast<size_t>(n), 0);
  const int L = evenHostRanks(c);
  if (withRotation && L > 1) {
    for (int r = 0; r < n; r++) to[size_t(r)] = r - r % L + (r % L + 1) % L;
    std::vector<int> image = linkImage(c, to);
    if (!image.empty()) {
      s.rotate = L;
      images.push_back(std::move(image));
    }
  }
  for (int p = s.rotate; withShift && p < n; p += s.rotate) {
    if (n % p) continue;
    for (int r = 0; r < n; r++) to[size_t(r)] = (r + p) % n;
    std::vector<int> image = linkImage(c, to);
    if (image.empty()) continue;
    s.period = p;
    images.push_back(std::move(image));
    break;
  }
  linkOrbits(s, images);
  return s;
}

bool movedPlanMatches(const RankSymmetry& sym, int r, const plan::Plan& a, const plan::Plan& b) {
  if (b.nranks != a.nranks || b.elemSize != a.elemSize || b.sliceBytes != a.sliceBytes ||
      b.channels.size() != a.channels.size())
    return false;
  auto moved = [&](int peer) { return peer < 0 ? peer : sym.moveLike(r, peer); };
  for (size_t ch = 0; ch < a.channels.size(); ch++) {
    const auto& x = a.channels[ch].steps;
    const auto& y = b.channels[ch].steps;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); i++) {
      const plan::Step& s = x[i];
      const plan::Step& t = y[i];
      if (s.nRecv != t.nRecv || s.nSend != t.nSend || s.conn != t.conn || s.count != t.count) return false;
      for (int k = 0; k < s.nRecv; k++)
        if (moved(s.recvPeer[k]) != t.recvPeer[k]) return false;
      for (int k = 0; k < s.nSend; k++)
        if (moved(s.sendPeer[k]) != t.sendPeer[k]) return false;
    }
  }
  return true;
}

}  // namespace weft::sim
