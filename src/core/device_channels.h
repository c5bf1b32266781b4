// How many channels (one CTA each) device calls get: from the link between
// the GPUs of one host, as NCCL sizes its channels (many over NVLink, few
// over PCIe), and per call from its size. Pure functions: tested without a
// GPU (tests/devhost), and identical on every rank given the same topology.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace weft {

enum class DeviceLink {
  HostMemory,  // no GPU peer-to-peer path (FIFOs in host memory), or unknown
  SameGpu,     // the ranks of this host share one GPU
  PciePeer,    // GPU peer-to-peer over PCIe switches (PIX, PXB)
  NvLink,      // NVLink, direct or through NVSwitch
};

// The most channels a device call of this communicator uses. `setting`:
// WEFT_DEVICE_NCHANNELS (0: from the link); `hostChannels`: the
// communicator's channel count (WEFT_NCHANNELS), which host-memory FIFOs keep.
// `sameGpuCtas`: for ranks sharing one GPU, the interpreter CTAs each may
// keep resident (sameGpuCtaShare; 0: unknown). One HBM serves all of them,
// so they take as many channels as fit resident together: on an H200, 2
// ranks at 64 channels moved 4x the busbw of 8 (docs/cuda.md).
inline int deviceChannelsFor(DeviceLink link, bool multiHost, int64_t setting, int hostChannels,
                             int sameGpuCtas = 0) {
  constexpr int kMax = 64;  // kMaxDeviceChannels
  if (setting > 0) return static_cast<int>(std::min<int64_t>(setting, kMax));
  int n = hostChannels;
  switch (link) {
    case DeviceLink::NvLink: n = multiHost ? 8 : 16; break;
    case DeviceLink::SameGpu: n = sameGpuCtas > 0 ? std::min(sameGpuCtas, kMax) : 8; break;
    case DeviceLink::PciePeer: n = 4; break;
    case DeviceLink::HostMemory: break;
  }
  return std::clamp(std::max(n, hostChannels), 1, kMax);
}

// Resident interpreter CTAs each rank sharing a GPU may take: the fewest
// any rank's GPU keeps (`resident[r]`, 0: unknown) over the most ranks of
// one host (`hostOf[r]`), all of which share its GPU. 0 when any is unknown.
inline int sameGpuCtaShare(const std::vector<int32_t>& resident, const std::vector<int>& hostOf) {
  if (resident.empty() || resident.size() != hostOf.size()) return 0;
  int32_t fewest = resident[0];
  for (int32_t r : resident) fewest = std::min(fewest, r);
  if (fewest <= 0) return 0;
  std::map<int, int> perHost;
  int most = 1;
  for (int h : hostOf) most = std::max(most, ++perHost[h]);
  return fewest / most;
}

// Channels of one ring-shaped device call moving `bytes` over `nranks`: one
// per 512 KiB per rank, but at least 8 once each rank has 256 KiB (one CTA
// copies ~38 GB/s, so a mid-size call on one channel waits on it), at most
// `maxChannels`; tiny calls, whose cost is latency, keep one. Measured on an
// H200 with 2 ranks sharing it: 1 MiB took 80 us on 1 channel, 42 on 8 and
// 39 on 32; 16 MiB ran at 174 GB/s busbw on 16 channels and 84 on 64; over
// 4 ranks, 105 on 8 and 34 on 32 (docs/cuda.md).
inline int deviceCallChannels(uint64_t bytes, int nranks, int maxChannels) {
  const uint64_t ranks = uint64_t(std::max(nranks, 1));
  uint64_t want = std::max<uint64_t>(1, bytes / (ranks * (512u << 10)));
  if (bytes >= ranks * (256u << 10)) want = std::max<uint64_t>(want, 8);
  return static_cast<int>(std::min<uint64_t>(want, uint64_t(std::max(maxChannels, 1))));
}

}  // namespace weft
