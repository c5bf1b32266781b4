// Every collective over sockets alone (shared memory off) with the socket
// transport sending large pieces from and receiving them into the caller's
// buffers (WEFT_SOCKET_DIRECT): in place and out of place, counts whose
// pieces fall on both sides of the threshold, every kind of element, each
// output checked against the float64 / exact reference with poisoned
// buffers around it (tests/collectives/collective_check.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "collective_check.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {


struct TypeOp {
  weftDataType_t type;
  weftRedOp_t op;
};
constexpr TypeOp kTypeOps[] = {{weftFloat32, weftSum}, {weftFloat64, kPreMulSum}, {weftInt8, weftMax},
                               {weftFloat16, weftAvg},  {weftUint64, weftProd},   {weftBfloat16, weftMin},
                               {weftInt32, weftSum}};

class SocketDirectCollectives : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
  }
  void TearDown() override {
    for (const char* v : {"WEFT_SHM_DISABLE", "WEFT_BUFFSIZE", "WEFT_SOCKET_DIRECT", "WEFT_SOCKET_INLINE"}) unsetenv(v);
  }

  // Runs every collective at every count over n thread ranks.
  void runAll(int n, std::initializer_list<size_t> counts, uint64_t seed) {
    ThreadRanks ranks(n);
    ASSERT_EQ(ranks.status(), weftSuccess);
    size_t k = 0;
    for (CollKind coll : kAllColls)
      for (size_t count : counts)
        for (int place = 0; place < (hasInPlace(coll) ? 2 : 1); ++place, ++k) {
          Scenario s;
          s.coll = coll;
          s.count = count;
          s.type = kTypeOps[k % std::size(kTypeOps)].type;
          s.op = kTypeOps[k % std::size(kTypeOps)].op;
          s.inPlace = place == 1;
          s.root = n - 1;
          s.seed = seed++;
          Inputs in = makeInputs(s, n);
          ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); }), "") << s.describe();
        }
  }
};

// 8 KB slots (WEFT_BUFFSIZE 64K over 8 slots) and a 4 KB threshold: odd
// counts cut pieces just below, at and above it; 1 sends every piece from
// or into the caller's memory.
TEST_P(SocketDirectCollectives, AroundTheThreshold) {
  setenv("WEFT_BUFFSIZE", "65536", 1);
  for (const char* direct : {"4096", "1"}) {
    setenv("WEFT_SOCKET_DIRECT", direct, 1);
    SCOPED_TRACE(std::string("WEFT_SOCKET_DIRECT=") + direct);
    runAll(GetParam(), {1, 1023, 1024, 1025, 3 * 1024 + 7, 40001}, 100);
  }
}

// The default geometry and threshold (512 KB slots, 64 KB) with a few
// megabytes a call.
TEST_P(SocketDirectCollectives, DefaultsAtMegabytes) { runAll(GetParam(), {16 * 1024 + 1, 700001}, 500); }

// Which thread moves a large piece depends on the host's cores per rank
// (the executor every piece under two, else the proxies past 32 KB): both
// movers, whatever this machine has.
TEST_P(SocketDirectCollectives, ExecutorOrProxiesMoveLargePieces) {
  for (const char* inl : {"32768", "1073741824"}) {
    setenv("WEFT_SOCKET_INLINE", inl, 1);
    SCOPED_TRACE(std::string("WEFT_SOCKET_INLINE=") + inl);
    runAll(GetParam(), {700001}, 700);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SocketDirectCollectives, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace weft::test
