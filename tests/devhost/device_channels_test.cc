#include "src/core/device_channels.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(DeviceChannels, FromTheGpuLink) {
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 0, 2), 16);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, true, 0, 2), 8);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::SameGpu, false, 0, 2), 8) << "resident CTAs unknown";
  EXPECT_EQ(deviceChannelsFor(DeviceLink::PciePeer, false, 0, 2), 4);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::HostMemory, false, 0, 2), 2) << "host FIFOs keep WEFT_NCHANNELS";
  EXPECT_EQ(deviceChannelsFor(DeviceLink::PciePeer, false, 0, 12), 12) << "never fewer than WEFT_NCHANNELS";
}

TEST(DeviceChannels, RanksSharingAGpuTakeWhatFitsResidentTogether) {
  EXPECT_EQ(deviceChannelsFor(DeviceLink::SameGpu, false, 0, 1, 66), 64) << "the launch limit";
  EXPECT_EQ(deviceChannelsFor(DeviceLink::SameGpu, false, 0, 1, 33), 33);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::SameGpu, false, 0, 1, 0), 8);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 0, 2, 33), 16) << "only a shared GPU uses the share";
  EXPECT_EQ(deviceChannelsFor(DeviceLink::SameGpu, false, 5, 1, 33), 5) << "the setting still wins";
  // 132 resident (an H200 at one CTA per multiprocessor): 2 ranks 66 each, 4 ranks 33.
  EXPECT_EQ(sameGpuCtaShare({132, 132}, {0, 0}), 66);
  EXPECT_EQ(sameGpuCtaShare({132, 132, 132, 132}, {0, 0, 0, 0}), 33);
  EXPECT_EQ(sameGpuCtaShare({132, 132, 264, 264}, {0, 0, 1, 1}), 66) << "the fewest over the most per host";
  EXPECT_EQ(sameGpuCtaShare({132, 132, 132}, {0, 0, 1}), 66);
  EXPECT_EQ(sameGpuCtaShare({132, 0}, {0, 0}), 0) << "one rank that cannot tell";
  EXPECT_EQ(sameGpuCtaShare({132}, {0, 0}), 0) << "sizes disagree";
  EXPECT_EQ(sameGpuCtaShare({1, 1, 1}, {0, 0, 0}), 0) << "not even one CTA each";
}

TEST(DeviceChannels, SettingWinsWithinTheLaunchLimit) {
  EXPECT_EQ(deviceChannelsFor(DeviceLink::HostMemory, false, 24, 2), 24);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 3, 2), 3);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 500, 2), 64);
}

TEST(DeviceChannels, PerCallBySize) {
  EXPECT_EQ(deviceCallChannels(0, 8, 16), 1);
  EXPECT_EQ(deviceCallChannels(4096, 8, 16), 1);
  EXPECT_EQ(deviceCallChannels(256 << 10, 2, 64), 1);     // 128 KiB per rank: latency
  EXPECT_EQ(deviceCallChannels(1ull << 20, 2, 64), 8);    // 512 KiB per rank: at least 8
  EXPECT_EQ(deviceCallChannels(1ull << 20, 2, 4), 4);     // never past the most
  EXPECT_EQ(deviceCallChannels(32ull << 20, 8, 16), 8);   // 32 MiB over 8 ranks: 512 KiB per rank per channel
  EXPECT_EQ(deviceCallChannels(16ull << 20, 2, 64), 16);  // 16 MiB over 2 ranks
  EXPECT_EQ(deviceCallChannels(1ull << 30, 8, 16), 16);   // capped
  EXPECT_EQ(deviceCallChannels(1ull << 30, 1, 0), 1);     // never below one
  EXPECT_EQ(deviceCallChannels(6ull << 20, 0, 16), 12);   // a zero rank count counts as one
}

}  // namespace
}  // namespace weft
