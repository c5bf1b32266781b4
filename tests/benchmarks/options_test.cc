#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "benchmarks/common/launch.h"
#include "benchmarks/common/options.h"

namespace weft::bench {
namespace {

ParseResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "all_reduce_perf");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parseOptions(static_cast<int>(args.size()), argv.data());
}

TEST(BenchOptions, SizesWithSuffixes) {
  EXPECT_EQ(parseSize("8"), 8u);
  EXPECT_EQ(parseSize("64K"), 65536u);
  EXPECT_EQ(parseSize("64k"), 65536u);
  EXPECT_EQ(parseSize("1M"), 1048576u);
  EXPECT_EQ(parseSize("2G"), 2147483648u);
  EXPECT_EQ(parseSize("16MB"), 16777216u);
  EXPECT_FALSE(parseSize(""));
  EXPECT_FALSE(parseSize("-1"));
  EXPECT_FALSE(parseSize("12X"));
  EXPECT_FALSE(parseSize("K"));
}

TEST(BenchOptions, Defaults) {
  ParseResult r = parse({});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.options.minBytes, 32u << 20);
  EXPECT_EQ(r.options.maxBytes, 32u << 20);
  EXPECT_EQ(r.options.iters, 20);
  EXPECT_EQ(r.options.warmupIters, 1);
  EXPECT_EQ(r.options.checkIters, 1);
  EXPECT_EQ(r.options.types, std::vector<weftDataType_t>{weftFloat32});
}

TEST(BenchOptions, TypicalCommandLine) {
  ParseResult r = parse({"-b", "8", "-e", "64M", "-f", "2", "-t", "4", "-n", "5", "-w", "2", "-m", "3", "-c", "0",
                         "-o", "all", "-d", "half", "-r", "all", "-z", "1", "-a", "3", "-N", "2", "-T", "30", "-J",
                         "out.json", "--mem", "host"});
  ASSERT_EQ(r.error, "");
  const Options& o = r.options;
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 64u << 20);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.nThreads, 4);
  EXPECT_EQ(o.iters, 5);
  EXPECT_EQ(o.warmupIters, 2);
  EXPECT_EQ(o.aggIters, 3);
  EXPECT_EQ(o.checkIters, 0);
  EXPECT_EQ(o.ops.size(), 6u);
  EXPECT_EQ(o.types, std::vector<weftDataType_t>{weftFloat16});
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.blocking, 1);
  EXPECT_EQ(o.average, 3);
  EXPECT_EQ(o.runCycles, 2);
  EXPECT_DOUBLE_EQ(o.timeoutSec, 30.0);
  EXPECT_EQ(o.jsonPath, "out.json");
}

TEST(BenchOptions, AllTypesAndLongOptions) {
  ParseResult r = parse({"--datatype", "all", "--op", "mulsum", "--mem", "device", "--minbytes", "1K"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.options.types.size(), 12u);
  EXPECT_EQ(r.options.ops, std::vector<BenchOp>{BenchOp::MulSum});
  EXPECT_EQ(r.options.memory, MemoryKind::Device);
  EXPECT_EQ(r.options.minBytes, 1024u);
}

TEST(BenchOptions, Errors) {
  EXPECT_NE(parse({"-d", "float128"}).error, "");
  EXPECT_NE(parse({"-o", "xor"}).error, "");
  EXPECT_NE(parse({"-b", "1M", "-e", "1K"}).error, "");
  EXPECT_NE(parse({"-t", "0"}).error, "");
  EXPECT_NE(parse({"-z", "7"}).error, "");
  EXPECT_NE(parse({"--mem", "gpu"}).error, "");
  EXPECT_NE(parse({"--bogus"}).error, "");
  EXPECT_NE(parse({"stray"}).error, "");
  EXPECT_NE(parse({"-i", "0"}).error, "");
}

// Found by the bench_flags fuzz target: -e near 2^64 with the default 1M
// step asked for ~10^13 sizes, and the sweep filled memory before it ran.
TEST(BenchOptions, SweepOfTooManySizesIsRefused) {
  EXPECT_NE(parse({"-b", "8", "-e", "17777777777777777777"}).error.find("more than"), std::string::npos);
  EXPECT_NE(parse({"-b", "1", "-e", "1G", "-i", "1"}).error, "");
  const ParseResult wide = parse({"-b", "8", "-e", "17777777777777777777", "-f", "2"});
  ASSERT_EQ(wide.error, "");
  EXPECT_LE(sweepSizes(wide.options).size(), 64u);
  const ParseResult most = parse({"-b", "0", "-e", std::to_string(kMaxSweepSizes - 1), "-i", "1"});
  ASSERT_EQ(most.error, "");
  EXPECT_EQ(sweepSizes(most.options).size(), kMaxSweepSizes);
}

TEST(BenchOptions, UnsupportedFlagsAreAcceptedAndNoted) {
  ParseResult r = parse({"-C", "1", "-u", "0"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.options.ignored, std::vector<std::string>{"-C 1"});
}

TEST(BenchOptions, GraphLaunches) {
  EXPECT_EQ(parse({}).options.graphLaunches, 0);
  ParseResult r = parse({"-G", "10"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.options.graphLaunches, 10);
  EXPECT_TRUE(r.options.ignored.empty());
  EXPECT_EQ(parse({"--cudagraph", "3"}).options.graphLaunches, 3);
  EXPECT_NE(parse({"-G", "-1"}).error, "");
  EXPECT_NE(parse({"-G", "x"}).error, "");
}

TEST(BenchOptions, MemoryIsDeviceWhenAGpuIsVisible) {
  const Options o = parse({}).options;
  EXPECT_FALSE(o.memoryGiven);
  MemoryChoice c = chooseMemory(o, 2, "");
  EXPECT_EQ(c.memory, MemoryKind::Device);
  EXPECT_EQ(c.error, "");
  c = chooseMemory(o, 0, "no GPU visible");
  EXPECT_EQ(c.memory, MemoryKind::Host);
  EXPECT_EQ(c.error, "");
  EXPECT_NE(c.info.find("no GPU visible"), std::string::npos) << c.info;
}

TEST(BenchOptions, MemoryHostWhenAsked) {
  const Options o = parse({"--mem", "host"}).options;
  EXPECT_TRUE(o.memoryGiven);
  MemoryChoice c = chooseMemory(o, 4, "");
  EXPECT_EQ(c.memory, MemoryKind::Host);
  EXPECT_EQ(c.error, "");
  EXPECT_NE(chooseMemory(parse({"--mem", "host", "-g", "2"}).options, 4, "").error, "");
}

TEST(BenchOptions, DeviceMemoryOrSeveralGpusNeedAGpu) {
  MemoryChoice c = chooseMemory(parse({"--mem", "device"}).options, 0, "this build has no CUDA");
  EXPECT_NE(c.error.find("this build has no CUDA"), std::string::npos) << c.error;
  c = chooseMemory(parse({"-g", "8"}).options, 0, "no GPU visible");
  EXPECT_NE(c.error.find("-g 8"), std::string::npos) << c.error;
  c = chooseMemory(parse({"-g", "8"}).options, 8, "");
  EXPECT_EQ(c.memory, MemoryKind::Device);
  EXPECT_EQ(c.error, "");
}

TEST(BenchOptions, GraphsWithHostBuffersAreNoted) {
  MemoryChoice c = chooseMemory(parse({"-G", "5"}).options, 0, "no GPU visible");
  EXPECT_EQ(c.error, "");
  EXPECT_NE(c.info.find("-G 5 ignored"), std::string::npos) << c.info;
  EXPECT_EQ(chooseMemory(parse({"-G", "5"}).options, 1, "").info.find("ignored"), std::string::npos);
}

TEST(BenchOptions, GpusAssignedRoundRobin) {
  // 2 processes x 2 threads x 2 GPUs on 8 GPUs: one each.
  EXPECT_EQ(gpuFor(0, 2, 2, 0, 0, 8), 0);
  EXPECT_EQ(gpuFor(0, 2, 2, 1, 1, 8), 3);
  EXPECT_EQ(gpuFor(1, 2, 2, 1, 1, 8), 7);
  // 4 ranks on one GPU share it.
  EXPECT_EQ(gpuFor(0, 1, 4, 0, 3, 1), 0);
  EXPECT_EQ(gpuFor(0, 4, 1, 3, 0, 2), 1);
}

TEST(BenchOptions, LocalRegister) {
  EXPECT_EQ(parse({}).options.localRegister, 0);
  ParseResult r = parse({"-R", "1"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.options.localRegister, 1);
  EXPECT_TRUE(r.options.ignored.empty());
  EXPECT_EQ(parse({"--local_register", "2"}).options.localRegister, 2);
  EXPECT_NE(parse({"-R", "3"}).error, "");
}

TEST(BenchOptions, Sweeps) {
  Options o;
  o.minBytes = 8;
  o.maxBytes = 64;
  o.stepFactor = 2;
  EXPECT_EQ(sweepSizes(o), (std::vector<size_t>{8, 16, 32, 64}));
  o.stepFactor = 1;
  o.stepBytes = 20;
  EXPECT_EQ(sweepSizes(o), (std::vector<size_t>{8, 28, 48}));
  o.minBytes = 0;
  o.stepFactor = 2;
  EXPECT_EQ(sweepSizes(o), (std::vector<size_t>{0}));
}

TEST(BenchLaunch, RankVariables) {
  std::string error;
  auto none = [](const char*) -> const char* { return nullptr; };
  LaunchInfo alone = detectLaunch(none, true, &error);
  EXPECT_EQ(alone.nProcs, 1);
  EXPECT_FALSE(alone.mpi);

  auto weft = [](const char* name) -> const char* {
    std::string n = name;
    return n == "WEFT_RANK" ? "2" : n == "WEFT_NRANKS" ? "4" : n == "OMPI_COMM_WORLD_SIZE" ? "4" : nullptr;
  };
  LaunchInfo w = detectLaunch(weft, true, &error);
  EXPECT_EQ(w.procRank, 2);
  EXPECT_EQ(w.nProcs, 4);
  EXPECT_FALSE(w.mpi);  // WEFT_RANK asks for the env path even under mpirun

  auto ompi = [](const char* name) -> const char* {
    std::string n = name;
    return n == "OMPI_COMM_WORLD_RANK" ? "1" : n == "OMPI_COMM_WORLD_SIZE" ? "2" : nullptr;
  };
  EXPECT_TRUE(detectLaunch(ompi, true, &error).mpi);
  EXPECT_FALSE(detectLaunch(ompi, false, &error).mpi);
  EXPECT_EQ(detectLaunch(ompi, false, &error).procRank, 1);

  auto torchrun = [](const char* name) -> const char* {
    std::string n = name;
    return n == "RANK" ? "3" : n == "WORLD_SIZE" ? "8" : nullptr;
  };
  EXPECT_EQ(detectLaunch(torchrun, true, &error).procRank, 3);
  EXPECT_EQ(error, "");

  auto broken = [](const char* name) -> const char* {
    std::string n = name;
    return n == "SLURM_PROCID" ? "5" : n == "SLURM_NTASKS" ? "4" : nullptr;
  };
  detectLaunch(broken, false, &error);
  EXPECT_NE(error, "");
}

}  // namespace
}  // namespace weft::bench
