#include <gtest/gtest.h>

#include "src/util/error.h"
#include "transports/ib/ib_hca_filter.h"

using namespace weft::ib;

TEST(IbHcaFilter, EmptyAcceptsEverything) {
  HcaFilter f = parseHcaFilter("");
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_0", 1));
  EXPECT_TRUE(hcaFilterAccepts(parseHcaFilter("  "), "rxe0", 2));
}

TEST(IbHcaFilter, PrefixMatchIsTheDefault) {
  HcaFilter f = parseHcaFilter("mlx5_1");
  EXPECT_FALSE(f.exact);
  EXPECT_FALSE(f.exclude);
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_1", 1));
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_10", 1));  // the classic surprise, kept for NCCL compatibility
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_0", 1));
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx4_1", 1));
}

TEST(IbHcaFilter, ExactMatch) {
  HcaFilter f = parseHcaFilter("=mlx5_1,mlx5_3");
  EXPECT_TRUE(f.exact);
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_1", 1));
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_3", 2));
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_10", 1));
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_", 1));
}

TEST(IbHcaFilter, Exclusion) {
  HcaFilter f = parseHcaFilter("^mlx5_0");
  EXPECT_TRUE(f.exclude);
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_0", 1));
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_01", 1));
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_1", 1));

  HcaFilter g = parseHcaFilter("^=mlx5_0");
  EXPECT_TRUE(g.exclude);
  EXPECT_TRUE(g.exact);
  EXPECT_FALSE(hcaFilterAccepts(g, "mlx5_0", 1));
  EXPECT_TRUE(hcaFilterAccepts(g, "mlx5_01", 1));
}

TEST(IbHcaFilter, DevicePort) {
  HcaFilter f = parseHcaFilter("mlx5_0:1, mlx5_1:2");
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].name, "mlx5_0");
  EXPECT_EQ(f.entries[0].port, 1);
  EXPECT_EQ(f.entries[1].name, "mlx5_1");
  EXPECT_EQ(f.entries[1].port, 2);
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_0", 1));
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_0", 2));
  EXPECT_TRUE(hcaFilterAccepts(f, "mlx5_1", 2));
  EXPECT_FALSE(hcaFilterAccepts(f, "mlx5_1", 1));

  HcaFilter ex = parseHcaFilter("^mlx5_0:2");
  EXPECT_TRUE(hcaFilterAccepts(ex, "mlx5_0", 1));
  EXPECT_FALSE(hcaFilterAccepts(ex, "mlx5_0", 2));
}

TEST(IbHcaFilter, MalformedIsRejectedWithTheSpecInTheMessage) {
  for (const char* bad : {"^", "=", "^=", "mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256", ":1", "a,,b", "a,",
                          "mlx5_0:1:0", "a,^b", "a,=b"}) {
    try {
      parseHcaFilter(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const weft::Error& e) {
      EXPECT_EQ(e.code(), weftInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("WEFT_IB_HCA"), std::string::npos) << e.what();
    }
  }
}
