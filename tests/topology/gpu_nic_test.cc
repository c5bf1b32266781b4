// GPU-to-NIC path types, the input of the GPUDirect RDMA distance check.
#include <gtest/gtest.h>

#include "src/topology/paths.h"
#include "topo_test_util.h"

namespace weft::topo {
namespace {

using testing::dataFile;

TEST(GpuNicPath, SameSwitchIsPixOtherSocketIsSys) {
  System sys = loadFile(dataFile(testing::kPcieBox));
  EXPECT_EQ(gpuNicPath(sys, 0, 0, "mlx5_0", 1), PathType::Pix);
  EXPECT_EQ(gpuNicPath(sys, 0, 3, "mlx5_1", 1), PathType::Pix);
  EXPECT_EQ(gpuNicPath(sys, 0, 0, "mlx5_1", 1), PathType::Sys);
}

TEST(GpuNicPath, UnknownGpuNicOrPortIsNoAnswer) {
  System sys = loadFile(dataFile(testing::kPcieBox));
  EXPECT_EQ(gpuNicPath(sys, 0, 7, "mlx5_0", 1), std::nullopt);
  EXPECT_EQ(gpuNicPath(sys, 0, 0, "mlx5_9", 1), std::nullopt);
  EXPECT_EQ(gpuNicPath(sys, 0, 0, "mlx5_0", 2), std::nullopt);
  System cpuOnly = loadFile(dataFile(testing::kCpuOnly));
  EXPECT_EQ(gpuNicPath(cpuOnly, 0, 0, "mlx5_0", 1), std::nullopt);
}

TEST(GpuNicPath, DgxGpuAndItsRailNic) {
  System sys = loadFile(dataFile(testing::kDgx));
  auto p = gpuNicPath(sys, 0, 0, "mlx5_0", 1);
  ASSERT_TRUE(p.has_value());
  EXPECT_LE(static_cast<int>(*p), static_cast<int>(PathType::Pxb)) << toString(*p);
}

}  // namespace
}  // namespace weft::topo
