#include "src/core/device_channels.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(DeviceChannels, FromTheGpuLink) {
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 0, 2), 16);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, true, 0, 2), 8);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::SameGpu, false, 0, 2), 8);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::PciePeer, false, 0, 2), 4);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::HostMemory, false, 0, 2), 2) << "host FIFOs keep WEFT_NCHANNELS";
  EXPECT_EQ(deviceChannelsFor(DeviceLink::PciePeer, false, 0, 12), 12) << "never fewer than WEFT_NCHANNELS";
}

TEST(DeviceChannels, SettingWinsWithinTheLaunchLimit) {
  EXPECT_EQ(deviceChannelsFor(DeviceLink::HostMemory, false, 24, 2), 24);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 3, 2), 3);
  EXPECT_EQ(deviceChannelsFor(DeviceLink::NvLink, false, 500, 2), 64);
}

TEST(DeviceChannels, PerCallBySize) {
  EXPECT_EQ(deviceCallChannels(0, 8, 16), 1);
  EXPECT_EQ(deviceCallChannels(4096, 8, 16), 1);
  EXPECT_EQ(deviceCallChannels(8ull << 20, 8, 16), 8);    // 8 MiB over 8 ranks: 128 KiB per rank per channel
  EXPECT_EQ(deviceCallChannels(1ull << 30, 8, 16), 16);   // capped
  EXPECT_EQ(deviceCallChannels(1ull << 30, 1, 0), 1);     // never below one
  EXPECT_EQ(deviceCallChannels(1ull << 20, 0, 16), 8);    // a zero rank count counts as one
}

}  // namespace
}  // namespace weft
