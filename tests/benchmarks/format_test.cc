// The output must match nccl-tests' layout byte for byte: these expected
// lines are copied from nccl-tests output (reference notes, section 8.3).
#include <gtest/gtest.h>

#include "benchmarks/common/format.h"

namespace weft::bench {
namespace {

TEST(BenchFormat, VersionAndStartLines) {
  EXPECT_EQ(versionLine(23007, 23007), "# nccl-tests version 2.19.6 nccl-headers=23007 nccl-library=23007\n");
  EXPECT_EQ(startLine("all_reduce_perf"), "# Collective test starting: all_reduce_perf\n");
  EXPECT_EQ(concludedLine("all_reduce_perf"), "# Collective test concluded: all_reduce_perf\n");
}

TEST(BenchFormat, ParameterLine) {
  ParamLineFields f{1, 8, 8, 134217728, 1048576, 2, 1, 20, 1, 1};
  EXPECT_EQ(paramLine(f),
            "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0 unalign: 0\n");
  f.stepFactor = 1;
  EXPECT_NE(paramLine(f).find(" step: 1048576(bytes) "), std::string::npos);
  f.graphLaunches = 10;
  EXPECT_NE(paramLine(f).find(" graph: 10 "), std::string::npos);
}

TEST(BenchFormat, DeviceLine) {
  EXPECT_EQ(deviceLine(0, 0, 12345, "hostname", 0, "0000:18:00", "NVIDIA H100 80GB HBM3"),
            "#  Rank  0 Group  0 Pid  12345 on   hostname device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n");
}

TEST(BenchFormat, HeaderRows) {
  EXPECT_EQ(resultHeader(),
            "#\n"
            "#                                                              out-of-place                       in-place          \n"
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
}

TEST(BenchFormat, DataLine) {
  const std::string line = resultPrefix(8388608, 2097152, "float", "sum", -1) + resultPart(63.09, 132.96, 232.68, 0) +
                           resultPart(62.18, 134.91, 236.09, 0);
  EXPECT_EQ(line,
            "     8388608       2097152     float     sum      -1    63.09  132.96  232.68       0    62.18  134.91  "
            "236.09       0");
}

TEST(BenchFormat, UncheckedPrintsNA) {
  EXPECT_EQ(resultPart(5.5, 0.01, 0.02, -1), "     5.50    0.01    0.02    N/A");
  EXPECT_EQ(resultPart(5.5, 0.01, 0.02, 3), "     5.50    0.01    0.02       3");
}

TEST(BenchFormat, NumbersFitTheirColumns) {
  EXPECT_EQ(fitNumber(63.094, 7), "63.09");
  EXPECT_EQ(fitNumber(12345.678, 7), "12345.7");
  EXPECT_EQ(fitNumber(1234567.4, 7), "1234567");
  EXPECT_EQ(fitNumber(123456789.0, 7), "1.2e+08");
  EXPECT_EQ(fitNumber(1234.5, 6), "1234.5");
  EXPECT_EQ(fitNumber(0.0, 6), "0.00");
}

TEST(BenchFormat, Footer) {
  EXPECT_EQ(resultFooter(0, 74.3286), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 74.3286 \n#\n");
  EXPECT_EQ(resultFooter(7, 1.5), "# Out of bounds values : 7 FAILED\n# Avg bus bandwidth    : 1.5 \n#\n");
}

}  // namespace
}  // namespace weft::bench
