#include "src/core/peer_info_check.h"

#include <cmath>
#include <cstring>
#include <string>

#include "src/topology/paths.h"
#include "src/util/error.h"

namespace weft {

namespace {

constexpr char kBellPrefix[] = "/weft-bell-";

// What ShmSegment names hold after the prefix: no second '/', no spaces,
// nothing a log line or shm_open would read differently.
bool bellNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

void checkBellName(size_t rank, const char* name) {
  const size_t prefix = sizeof(kBellPrefix) - 1;
  bool ok = strncmp(name, kBellPrefix, prefix) == 0 && name[prefix] != 0;
  for (const char* c = name + prefix; ok && *c; ++c) ok = bellNameChar(*c);
  if (!ok) raise(weftRemoteError, "rank %zu named a doorbell segment weft does not make (\"%s\")", rank, name);
}

constexpr int kPathTypes = static_cast<int>(topo::PathType::Dis) + 1;

void checkPathType(size_t rank, const char* field, int8_t t) {
  if (t < 0 || t >= kPathTypes)
    raise(weftRemoteError, "rank %zu sent a ring view whose %s is %d (path types are 0..%d)", rank, field, int(t),
          kPathTypes - 1);
}

void checkBandwidth(size_t rank, const char* field, int channel, float bw) {
  if (!std::isfinite(bw) || bw < 0)
    raise(weftRemoteError, "rank %zu sent a ring view whose %s%s%s is %g GB/s (must be finite and >= 0)", rank, field,
          channel >= 0 ? " of channel " : "", channel >= 0 ? std::to_string(channel).c_str() : "", double(bw));
}

void costProblem(int rank, const std::string& what) {
  raise(weftRemoteError,
        "rank %d sent cost-model inputs with %s (its WEFT_TUNE_* settings or WEFT_TUNE_FILE, or not weft's bytes)", rank,
        what.c_str());
}

void checkCostValue(int rank, const std::string& field, double v, bool positive) {
  if (!std::isfinite(v) || v < 0 || (positive && v == 0))
    costProblem(rank, field + " = " + std::to_string(v) + (positive ? " (must be > 0)" : " (must be >= 0)"));
}

void checkCurve(int rank, int algo, const algo::MeasuredCurve& m) {
  const std::string name = "measured curve " + std::to_string(algo);
  if (m.nPoints < 0 || m.nPoints > algo::kMaxMeasuredPoints)
    costProblem(rank, name + " of " + std::to_string(m.nPoints) + " points (at most " +
                          std::to_string(algo::kMaxMeasuredPoints) + ")");
  for (int i = 0; i < m.nPoints; ++i) {
    checkCostValue(rank, name + " bytes", m.bytes[i], true);
    checkCostValue(rank, name + " time", m.us[i], true);
    if (i > 0 && !(m.bytes[i] > m.bytes[i - 1])) costProblem(rank, name + " whose sizes do not grow");
  }
}

}  // namespace

void checkPeerCostInputs(const algo::CostInputs& c, int rank) {
  checkCostValue(rank, "intra latency", c.intra.latencyUs, false);
  checkCostValue(rank, "intra bandwidth", c.intra.bandwidthGBs, true);
  checkCostValue(rank, "inter latency", c.inter.latencyUs, false);
  checkCostValue(rank, "inter bandwidth", c.inter.bandwidthGBs, true);
  checkCostValue(rank, "channel bandwidth", c.channelBwGBs, false);
  checkCostValue(rank, "double tree network scale", c.treeNetScale, true);
  if (c.nicsPerHost < 1) costProblem(rank, "nicsPerHost = " + std::to_string(c.nicsPerHost) + " (must be >= 1)");
  if (c.nHostRuns < 0 || c.nHostRuns > algo::kMaxHostRuns)
    costProblem(rank, "nHostRuns = " + std::to_string(c.nHostRuns) + " (must be 0.." + std::to_string(algo::kMaxHostRuns) + ")");
  for (int i = 0; i < c.nHostRuns; ++i)
    if (c.hostRuns[i] == 0) costProblem(rank, "host run " + std::to_string(i) + " of 0 ranks");
  if (c.measuredRanks < 0 || c.measuredHosts < 0) costProblem(rank, "a negative measured rank or host count");
  unsigned char deviceBuffers = 0;
  static_assert(sizeof(c.deviceBuffers) == 1);
  std::memcpy(&deviceBuffers, &c.deviceBuffers, 1);  // a bool that is neither 0 nor 1 cannot be loaded
  if (deviceBuffers > 1) costProblem(rank, "deviceBuffers byte " + std::to_string(deviceBuffers));
  for (int a = 0; a < algo::kMaxAlgos; ++a) {
    checkCostValue(rank, "base_us of algorithm " + std::to_string(a), c.calib[a].baseUs, false);
    checkCostValue(rank, "bw_scale of algorithm " + std::to_string(a), c.calib[a].bwScale, true);
    checkCurve(rank, a, c.calib[a].measured);
  }
}

void checkPeerInfos(std::vector<PeerInfo>& peers) {
  for (size_t i = 0; i < peers.size(); ++i) {
    PeerInfo& p = peers[i];
    p.hostname[sizeof(p.hostname) - 1] = 0;
    p.bellShmName[sizeof(p.bellShmName) - 1] = 0;
    if (p.rank != static_cast<int32_t>(i))
      raise(weftRemoteError, "rank %zu sent the set-up information of rank %d", i, p.rank);
    checkBellName(i, p.bellShmName);
    if (p.cudaDev < -1 || p.cudaDev > kMaxPeerCudaDev)
      raise(weftRemoteError, "rank %zu sent cudaDev %d (a CUDA device is -1 for none or 0..%d)", i, p.cudaDev,
            kMaxPeerCudaDev);
  }
}

void checkPeerDevices(const std::vector<int32_t>& devices, const std::vector<int>& sameHost, const topo::System& sys,
                      int host) {
  for (int r : sameHost) {
    if (r < 0 || static_cast<size_t>(r) >= devices.size())
      raise(weftInternalError, "topology: rank %d of this host is not one of %zu ranks", r, devices.size());
    const int32_t d = devices[size_t(r)];
    if (d < 0) continue;  // unknown topology: the caller keeps rank order
    const bool ok = static_cast<size_t>(d) < sys.nodes.size() && sys.nodes[size_t(d)].host == host &&
                    (sys.nodes[size_t(d)].kind == topo::NodeKind::Gpu || sys.nodes[size_t(d)].kind == topo::NodeKind::Cpu);
    if (!ok)
      raise(weftRemoteError,
            "rank %d placed itself on topology node %d, not a GPU or CPU of its host's %zu nodes (do all ranks of a "
            "host use the same WEFT_TOPO_FILE?)", r, d, sys.nodes.size());
  }
}

void checkHostRingViews(const std::vector<topo::HostRingView>& views, int nChannels) {
  const int channels = nChannels < topo::kMaxViewChannels ? nChannels : topo::kMaxViewChannels;
  for (size_t r = 0; r < views.size(); ++r) {
    const topo::HostRingView& v = views[r];
    checkPathType(r, "intraType", v.intraType);
    checkPathType(r, "nicType", v.nicType);
    if (v.hostMemory != 0 && v.hostMemory != 1)
      raise(weftRemoteError, "rank %zu sent a ring view with hostMemory %d (0 or 1)", r, int(v.hostMemory));
    checkBandwidth(r, "nicBw", -1, v.nicBw);
    for (int c = 0; c < channels; ++c) {
      checkBandwidth(r, "bw", c, v.bw[c]);
      checkBandwidth(r, "hostBw", c, v.hostBw[c]);
    }
  }
}

}  // namespace weft
