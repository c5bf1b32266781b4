// How many channels (one CTA each) device calls get: from the link between
// the GPUs of one host, as NCCL sizes its channels (many over NVLink, few
// over PCIe), and per call from its size. Pure functions: tested without a
// GPU (tests/devhost), and identical on every rank given the same topology.
#pragma once

#include <algorithm>
#include <cstdint>

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
inline int deviceChannelsFor(DeviceLink link, bool multiHost, int64_t setting, int hostChannels) {
  constexpr int kMax = 64;  // kMaxDeviceChannels
  if (setting > 0) return static_cast<int>(std::min<int64_t>(setting, kMax));
  int n = hostChannels;
  switch (link) {
    case DeviceLink::NvLink: n = multiHost ? 8 : 16; break;
    case DeviceLink::SameGpu: n = 8; break;
    case DeviceLink::PciePeer: n = 4; break;
    case DeviceLink::HostMemory: break;
  }
  return std::clamp(std::max(n, hostChannels), 1, kMax);
}

// Channels of one ring-shaped device call moving `bytes` over `nranks`:
// enough that each channel moves at least 128 KiB per rank (fewer CTAs for
// small calls, whose cost is latency), at most `maxChannels`.
inline int deviceCallChannels(uint64_t bytes, int nranks, int maxChannels) {
  const uint64_t perChannel = uint64_t(std::max(nranks, 1)) * (128u << 10);
  const uint64_t want = std::max<uint64_t>(1, bytes / perChannel);
  return static_cast<int>(std::min<uint64_t>(want, uint64_t(std::max(maxChannels, 1))));
}

}  // namespace weft
