// What a rank accepts from its peers at init (src/core/peer_info_check.h):
// every bad field is refused with weftRemoteError, every good one passes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "src/core/host_identity.h"
#include "src/core/peer_info_check.h"
#include "src/topology/topo_file.h"
#include "src/util/error.h"
#include "topo_test_util.h"

namespace weft {
namespace {

std::vector<PeerInfo> goodPeers(int n) {
  std::vector<PeerInfo> peers(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    peers[size_t(r)].rank = r;
    snprintf(peers[size_t(r)].bellShmName, sizeof(PeerInfo::bellShmName), "/weft-bell-%016x", r + 1);
    snprintf(peers[size_t(r)].hostname, sizeof(PeerInfo::hostname), "host%d", r);
    peers[size_t(r)].cudaDev = r % 2 ? -1 : r;
  }
  return peers;
}

weftResult_t codeOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return weftSuccess;
}

TEST(PeerInfoCheck, AcceptsWhatWeftSends) {
  std::vector<PeerInfo> peers = goodPeers(4);
  EXPECT_EQ(codeOf([&] { checkPeerInfos(peers); }), weftSuccess);
}

TEST(PeerInfoCheck, TerminatesStrings) {
  std::vector<PeerInfo> peers = goodPeers(2);
  memset(peers[1].hostname, 'x', sizeof(PeerInfo::hostname));
  checkPeerInfos(peers);
  EXPECT_EQ(strlen(peers[1].hostname), sizeof(PeerInfo::hostname) - 1);
}

TEST(PeerInfoCheck, RefusesEachBadField) {
  auto refused = [](auto change) {
    std::vector<PeerInfo> peers = goodPeers(3);
    change(peers[2]);
    return codeOf([&] { checkPeerInfos(peers); });
  };
  EXPECT_EQ(refused([](PeerInfo& p) { p.rank = 1; }), weftRemoteError);
  EXPECT_EQ(refused([](PeerInfo& p) { snprintf(p.bellShmName, 64, "/dev-shm-other"); }), weftRemoteError);
  EXPECT_EQ(refused([](PeerInfo& p) { snprintf(p.bellShmName, 64, "/weft-bell-"); }), weftRemoteError);
  EXPECT_EQ(refused([](PeerInfo& p) { snprintf(p.bellShmName, 64, "/weft-bell-a/../b"); }), weftRemoteError);
  EXPECT_EQ(refused([](PeerInfo& p) { p.cudaDev = -2; }), weftRemoteError);
  EXPECT_EQ(refused([](PeerInfo& p) { p.cudaDev = kMaxPeerCudaDev + 1; }), weftRemoteError);
  EXPECT_EQ(refused([](PeerInfo& p) { p.cudaDev = kMaxPeerCudaDev; }), weftSuccess);
}

TEST(PeerInfoCheck, DevicesMustBeGpusOrCpusOfTheHost) {
  const topo::System sys = topo::loadFile(topo::testing::dataFile("pcie-2socket-4gpu-2nic.json"));
  int gpu = -1, nic = -1;
  for (size_t i = 0; i < sys.nodes.size(); ++i) {
    if (sys.nodes[i].kind == topo::NodeKind::Gpu && gpu < 0) gpu = int(i);
    if (sys.nodes[i].kind == topo::NodeKind::Nic && nic < 0) nic = int(i);
  }
  ASSERT_GE(gpu, 0);
  ASSERT_GE(nic, 0);
  const std::vector<int> sameHost = {0, 1};
  auto check = [&](std::vector<int32_t> devices) {
    return codeOf([&] { checkPeerDevices(devices, sameHost, sys, 0); });
  };
  EXPECT_EQ(check({gpu, gpu}), weftSuccess);
  EXPECT_EQ(check({gpu, -1}), weftSuccess);  // unknown: the caller keeps rank order
  EXPECT_EQ(check({gpu, int32_t(sys.nodes.size())}), weftRemoteError);
  EXPECT_EQ(check({gpu, 1 << 30}), weftRemoteError);
  EXPECT_EQ(check({gpu, nic}), weftRemoteError);
  EXPECT_EQ(check({gpu, gpu}), weftSuccess);
  EXPECT_EQ(codeOf([&] { checkPeerDevices({gpu, gpu}, sameHost, sys, 1); }), weftRemoteError);  // not on host 1
}

TEST(PeerInfoCheck, RingViewsMustHoldPathTypesAndBandwidths) {
  auto check = [](auto change) {
    std::vector<topo::HostRingView> views(2);
    for (auto& v : views) v.bw[0] = v.bw[1] = 10.f;
    change(views[1]);
    return codeOf([&] { checkHostRingViews(views, 2); });
  };
  EXPECT_EQ(check([](topo::HostRingView&) {}), weftSuccess);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.intraType = 8; }), weftRemoteError);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.nicType = -1; }), weftRemoteError);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.hostMemory = 1; }), weftSuccess);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.hostMemory = 2; }), weftRemoteError);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.bw[1] = NAN; }), weftRemoteError);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.bw[1] = -1.f; }), weftRemoteError);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.nicBw = INFINITY; }), weftRemoteError);
  EXPECT_EQ(check([](topo::HostRingView& v) { v.bw[5] = NAN; }), weftSuccess);  // past the channels in use
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(PeerInfoCheck, CostInputsMustBeUsable) {
  auto check = [](auto change) {
    algo::CostInputs c;
    c.calib[1].measured.add(1024, 10);
    c.calib[1].measured.add(4096, 20);
    change(c);
    return codeOf([&] { checkPeerCostInputs(c, 0); });
  };
  EXPECT_EQ(check([](algo::CostInputs&) {}), weftSuccess);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.calib[1].measured.nPoints = algo::kMaxMeasuredPoints + 1; }),
            weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.calib[1].measured.nPoints = -1; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.calib[1].measured.bytes[1] = 1024; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.calib[1].measured.us[0] = 0; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.inter.bandwidthGBs = 0; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.intra.latencyUs = NAN; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.calib[7].bwScale = 0; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.calib[0].baseUs = -1; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.nicsPerHost = 0; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.channelBwGBs = INFINITY; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.measuredRanks = -4; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { memset(&c.deviceBuffers, 7, 1); }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.nHostRuns = algo::kMaxHostRuns + 1; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.nHostRuns = -1; }), weftRemoteError);
  EXPECT_EQ(check([](algo::CostInputs& c) { c.nHostRuns = 2, c.hostRuns[0] = 3; }), weftRemoteError);  // run 1: 0 ranks
  EXPECT_EQ(check([](algo::CostInputs& c) { c.nHostRuns = 2, c.hostRuns[0] = 3, c.hostRuns[1] = 1; }), weftSuccess);
}

// Ranks bound to a core each (mpirun's default) have the host's cores
// between them: the union of their masks, counted once per CPU, this
// host's ranks only.
TEST(HostCpus, UnionOfTheHostsRanksMasks) {
  std::vector<PeerInfo> peers = goodPeers(4);
  for (PeerInfo& p : peers) p.hostHash = 7;
  peers[3].hostHash = 9;
  EXPECT_EQ(hostCpuCount(peers, 7), 0);  // no masks sent
  peers[0].cpuMask[0] = 1u << 0;
  peers[1].cpuMask[0] = 1u << 1;
  peers[2].cpuMask[1] = 1u << 3;  // CPU 67
  peers[3].cpuMask[0] = 0xff;     // another host's CPUs do not count here
  EXPECT_EQ(hostCpuCount(peers, 7), 3);
  peers[2].cpuMask[0] = 0x3;  // overlapping masks: each CPU once
  EXPECT_EQ(hostCpuCount(peers, 7), 3);
  EXPECT_EQ(hostCpuCount(peers, 9), 8);
  uint64_t mine[kCpuMaskWords];
  const int n = ownCpuMask(mine);
  int bits = 0;
  for (uint64_t w : mine) bits += __builtin_popcountll(w);
  EXPECT_GE(n, 1);
  EXPECT_EQ(bits, n);
}

}  // namespace
}  // namespace weft
