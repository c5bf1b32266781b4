#include "transports/ib/nic_choice.h"

#include <algorithm>

#include "src/util/error.h"

namespace weft::ib {

namespace {

// Unknown after SYS: a port the topology cannot place is no closer than
// one it knows to be across the SMP link.
int distanceRank(const std::optional<PciDistance>& d) {
  return d ? static_cast<int>(*d) : static_cast<int>(PciDistance::Sys) + 1;
}

const char* distanceText(const std::optional<PciDistance>& d) { return d ? pciDistanceName(*d) : "at an unknown distance"; }

// The best port: closest, then fastest, then first in the decision's order.
int bestPort(const std::vector<NicCandidate>& ports) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(ports.size()); ++i) {
    const NicCandidate& a = ports[i];
    const NicCandidate& b = ports[best];
    if (distanceRank(a.distance) < distanceRank(b.distance) ||
        (distanceRank(a.distance) == distanceRank(b.distance) && a.speedMbps > b.speedMbps))
      best = i;
  }
  return best;
}

std::string joinNames(const NicChoiceInput& in, const std::vector<int>& idx) {
  std::string s;
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + in.ports[idx[i]].name;
  return s;
}

}  // namespace

NicChoice chooseNics(const NicChoiceInput& in) {
  if (in.ports.empty()) raise(weftInvalidArgument, "no usable IB port to choose from");
  if (in.localRank < 0) raise(weftInvalidArgument, "local rank %d is negative", in.localRank);
  if (in.maxNics < 0) raise(weftInvalidArgument, "WEFT_IB_MAX_NICS=%d is negative", in.maxNics);
  const NicCandidate& best = in.ports[bestPort(in.ports)];
  std::vector<int> closest;
  for (int i = 0; i < static_cast<int>(in.ports.size()); ++i) {
    const NicCandidate& p = in.ports[i];
    if (distanceRank(p.distance) == distanceRank(best.distance) && p.speedMbps == best.speedMbps &&
        p.linkLayer == best.linkLayer)
      closest.push_back(i);
  }
  NicChoice c;
  c.linkLayer = best.linkLayer;
  const size_t n = closest.size();
  const size_t start = static_cast<size_t>(in.localRank) % n;
  const size_t count = in.maxNics > 0 ? std::min(n, static_cast<size_t>(in.maxNics)) : n;
  for (size_t k = 0; k < count; ++k) c.rails.push_back(closest[(start + k) % n]);
  c.reason = in.locality + " is " + distanceText(best.distance) + " from " + std::to_string(n) + " port(s) (" +
             joinNames(in, closest) + ")";
  if (n > 1) c.reason += "; local rank " + std::to_string(in.localRank) + " starts at " + in.ports[c.rails[0]].name;
  if (count > 1)
    c.reason += "; " + std::to_string(count) + " rails over the channels (" + joinNames(in, c.rails) + ")";
  if (count < n) c.reason += "; capped by WEFT_IB_MAX_NICS=" + std::to_string(in.maxNics);
  if (closest.size() < in.ports.size())
    c.reason += "; " + std::to_string(in.ports.size() - closest.size()) + " farther, slower or other-link port(s) unused";
  return c;
}

int nicForChannel(const NicChoice& choice, int conn) {
  if (choice.rails.empty()) raise(weftInternalError, "IB NIC choice without a port");
  const int n = static_cast<int>(choice.rails.size());
  return choice.rails[static_cast<size_t>(((conn % n) + n) % n)];
}

}  // namespace weft::ib
