#include "algorithms/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace weft::algo {

const char* algoName(Algo a) {
  switch (a) {
    case Algo::Ring: return "ring";
    case Algo::Tree: return "binarytree";
    case Algo::DoubleTree: return "tree";
  }
  return "?";
}

bool algoSupports(Algo a, plan::Coll c) {
  switch (c) {
    case plan::Coll::AllReduce: return true;
    case plan::Coll::ReduceScatter:
    case plan::Coll::AllGather:
    case plan::Coll::Broadcast:
    case plan::Coll::Reduce: return a == Algo::Ring;
    default: return false;
  }
}

namespace {

double log2ceil(int x) { return x <= 1 ? 0.0 : std::ceil(std::log2(double(x))); }

}  // namespace

namespace {

// The analytic model: latency terms plus bytes over bandwidth, returned
// apart so that calibration can scale the bytes term alone.
struct Terms {
  double latUs;
  double bytesUs;
};

Terms analytic(plan::Coll c, Algo a, const CostInputs& in, double bytes);

}  // namespace

bool usesMeasuredCurve(plan::Coll c, Algo a, const CostInputs& in) {
  return c == plan::Coll::AllReduce && in.nranks > 1 && in.measuredRanks == in.nranks &&
         in.measuredHosts == in.nHosts && in.measured[static_cast<int>(a)].nPoints > 0;
}

double estimateUs(plan::Coll c, Algo a, const CostInputs& in) {
  if (!algoSupports(a, c)) return std::numeric_limits<double>::infinity();
  if (in.nranks <= 1) return in.intra.latencyUs;
  const int i = static_cast<int>(a);
  auto model = [&](double bytes) {
    Terms t = analytic(c, a, in, bytes);
    return in.baseUs[i] + t.latUs + in.bwScale[i] * t.bytesUs;
  };
  if (usesMeasuredCurve(c, a, in)) return curveUs(in.measured[i], double(in.bytes), model);
  return model(double(in.bytes));
}

double latencyTermUs(plan::Coll c, Algo a, const CostInputs& in) {
  return in.nranks <= 1 ? 0.0 : analytic(c, a, in, double(in.bytes)).latUs;
}

double bytesTermUs(plan::Coll c, Algo a, const CostInputs& in) {
  return in.nranks <= 1 ? 0.0 : analytic(c, a, in, double(in.bytes)).bytesUs;
}

double hopLatencyUs(const CostInputs& in) {
  return std::clamp(in.nHosts, 1, std::max(in.nranks, 1)) > 1 ? in.inter.latencyUs : in.intra.latencyUs;
}

double linkBytesPerUs(const CostInputs& in) {
  const bool multiHost = std::clamp(in.nHosts, 1, std::max(in.nranks, 1)) > 1;
  return 1e3 * (multiHost ? std::min(in.inter.bandwidthGBs, in.intra.bandwidthGBs) : in.intra.bandwidthGBs);
}

namespace {

Terms analytic(plan::Coll c, Algo a, const CostInputs& in, double B) {
  const double n = std::max(in.nranks, 1);
  const int hosts = std::clamp(in.nHosts, 1, in.nranks);
  const bool multiHost = hosts > 1;
  // A ring step waits for its slowest hop; its data crosses the slowest link.
  const double hopLat = hopLatencyUs(in);
  const double bwBytesPerUs = linkBytesPerUs(in);
  const double perHost = std::ceil(n / hosts);
  // Tree depth: the chain inside a host plus the tree over hosts.
  const double chainHops = perHost - 1, netHops = log2ceil(hosts);
  const double treeLat = chainHops * in.intra.latencyUs + netHops * (multiHost ? in.inter.latencyUs : 0.0);
  switch (a) {
    case Algo::Ring:
      switch (c) {
        case plan::Coll::AllReduce: return {2 * (n - 1) * hopLat, 2 * (n - 1) / n * B / bwBytesPerUs};
        case plan::Coll::ReduceScatter:
        case plan::Coll::AllGather: return {(n - 1) * hopLat, (n - 1) / n * B / bwBytesPerUs};
        default: return {(n - 1) * hopLat, B / bwBytesPerUs};  // pipelined chain
      }
    case Algo::Tree:
      // Up and down run at once; an interior rank takes in B from each of two
      // children and B from its parent.
      return {2 * (multiHost ? treeLat : log2ceil(in.nranks) * in.intra.latencyUs), 3 * B / bwBytesPerUs};
    case Algo::DoubleTree:
      // Half the data per tree: interior in one (2 x B/2 up + B/2 down), a
      // leaf in the other (B/2 down): 2B in, like a ring's 2(n-1)/n B.
      // Inside a host the trees are chains (buildDoubleTree), so one host
      // pays the chain's depth, not log2(n).
      return {2 * treeLat, 2 * B / bwBytesPerUs};
  }
  return {std::numeric_limits<double>::infinity(), 0};
}

}  // namespace

}  // namespace weft::algo
