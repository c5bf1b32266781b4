// weftCommWarmup: the device FIFOs of every call shape connected before any
// call, as one collective step (here without a GPU: the host ends of those
// edges, which is what a rank without a GPU connects).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/p2p.h"
#include "src/core/comm.h"
#include "src/core/connections.h"
#include "src/util/error.h"
#include "tests/collectives/thread_ranks.h"
#include "weft/weft.h"

namespace weft::test {
namespace {

// Every pair's edges, as AllToAll (2n-1 channels) plans them.
plan::Plan allToAll(int n, int rank) {
  algo::CollArgs a;
  a.coll = plan::Coll::AllToAll;
  a.nranks = n;
  a.rank = rank;
  a.count = 4;
  return algo::buildAllToAll(a);
}

// Whether rank r can reach its ring successor over the device LL
// connections (connection index 128, launch.cc's kLlConnBase).
bool hasLlConnection(weftComm_t c, int n, int r) {
  try {
    (void)c->connections->send((r + 1) % n, 128, /*device=*/true);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(Warmup, ConnectsEveryDeviceCallShapeBeforeAnyCall) {
  setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  const int n = 3;
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  for (int r = 0; r < n; r++) {
    EXPECT_FALSE(ranks.comm(r)->connections->connectedFor(allToAll(n, r), /*device=*/true)) << "rank " << r;
    EXPECT_FALSE(hasLlConnection(ranks.comm(r), n, r)) << "rank " << r;
  }
  EXPECT_EQ(ranks.run([&](int r) {
              const weftResult_t e = weftCommWarmup(ranks.comm(r));
              return e == weftSuccess ? std::string() : "rank " + std::to_string(r) + ": " + weftGetErrorString(e);
            }),
            "");
  for (int r = 0; r < n; r++) {
    EXPECT_TRUE(ranks.comm(r)->connections->connectedFor(allToAll(n, r), /*device=*/true)) << "rank " << r;
    EXPECT_TRUE(hasLlConnection(ranks.comm(r), n, r)) << "rank " << r;
  }
  // The communicator still works, and a second warm-up connects nothing new.
  EXPECT_EQ(ranks.run([&](int r) {
              std::vector<float> v(100, float(r + 1));
              weftResult_t e = weftAllReduce(v.data(), v.data(), v.size(), weftFloat32, weftSum, ranks.comm(r), nullptr);
              if (e == weftSuccess) e = weftCommWarmup(ranks.comm(r));
              if (e != weftSuccess) return "rank " + std::to_string(r) + ": " + weftGetErrorString(e);
              return v[99] == 6.0f ? std::string() : "rank " + std::to_string(r) + ": wrong sum";
            }),
            "");
}

TEST(Warmup, RefusedInsideAGroupAndForBadHandles) {
  EXPECT_EQ(weftCommWarmup(nullptr), weftInvalidArgument);
  weftComm_t c = nullptr;
  ASSERT_EQ(weftCommInitAll(&c, 1, nullptr), weftSuccess);
  ASSERT_EQ(weftGroupStart(), weftSuccess);
  EXPECT_EQ(weftCommWarmup(c), weftInvalidUsage);
  ASSERT_EQ(weftGroupEnd(), weftSuccess);
  EXPECT_EQ(weftCommWarmup(c), weftSuccess);  // one rank: nothing to connect
  ASSERT_EQ(weftCommDestroy(c), weftSuccess);
  EXPECT_EQ(weftCommWarmup(c), weftInvalidUsage);
}

}  // namespace
}  // namespace weft::test
