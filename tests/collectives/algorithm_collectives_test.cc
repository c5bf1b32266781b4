// Every algorithm end to end through the host executor: AllReduce with the
// algorithm forced by WEFT_ALGO, ranks as threads, over shared memory and
// over the socket transport, checked against float64 / exact references and
// bit-identical across ranks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "collective_check.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {

using Param = std::tuple<std::string, bool, int>;  // algorithm, socket, ranks

class AlgorithmCollectives : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const auto& [algo, socket, n] = GetParam();
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
    setenv("WEFT_BUFFSIZE", "32768", 1);
    setenv("WEFT_ALGO", ("allreduce:" + algo).c_str(), 1);
    if (socket) setenv("WEFT_SHM_DISABLE", "1", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_ALGO");
    unsetenv("WEFT_SHM_DISABLE");
  }
};

TEST_P(AlgorithmCollectives, AllReduceMatchesReference) {
  const int n = std::get<2>(GetParam());
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  uint64_t seed = 900;
  for (weftDataType_t type : {weftFloat32, weftBfloat16, weftInt64, weftFloat64})
    for (weftRedOp_t op : {weftSum, weftMax, weftAvg, kPreMulSum})
      for (size_t count : {size_t(0), size_t(1), size_t(n + 1), size_t(12007)})
        for (bool inPlace : {false, true}) {
          Scenario s;
          s.coll = CollKind::AllReduce;
          s.type = type;
          s.op = op;
          s.count = count;
          s.inPlace = inPlace;
          s.seed = seed++;
          Inputs in = makeInputs(s, n);
          std::vector<uint64_t> digests(n);
          std::string err = ranks.run([&](int r) {
            std::string e = runAndCheck(ranks.comm(r), r, n, s, &in);
            digests[r] = lastOutputDigest();
            return e;
          });
          ASSERT_EQ(err, "") << s.describe();
          for (int r = 1; r < n; r++) ASSERT_EQ(digests[r], digests[0]) << s.describe() << " rank " << r;
        }
}

std::string name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [algo, socket, n] = info.param;
  return algo + (socket ? "_socket_" : "_shm_") + std::to_string(n) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Shm, AlgorithmCollectives,
                         ::testing::Combine(::testing::Values("ring", "binarytree", "tree", "doubling"), ::testing::Values(false),
                                            ::testing::Values(2, 3, 5, 8)),
                         name);
INSTANTIATE_TEST_SUITE_P(Socket, AlgorithmCollectives,
                         ::testing::Combine(::testing::Values("ring", "binarytree", "tree", "doubling"), ::testing::Values(true),
                                            ::testing::Values(3, 4)),
                         name);
// Two ranks over sockets: the one-shot plan on FIFO slots (WEFT_ALGO names
// it; ll is off with shared memory), in one round and in many.
INSTANTIATE_TEST_SUITE_P(SocketTwo, AlgorithmCollectives,
                         ::testing::Combine(::testing::Values("ring", "oneshot", "doubling"), ::testing::Values(true),
                                            ::testing::Values(2)),
                         name);

}  // namespace
}  // namespace weft::test
