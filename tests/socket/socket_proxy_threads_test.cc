// The socket transport's proxy work runs on two threads per rank (one for
// its sending connection ends, one for its receiving ones), however many
// peers and channels the rank's connections reach: thread ranks over
// sockets only (shared memory off) count the proxy threads by name while
// every collective runs and is checked, and find none once destroyed.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "collective_check.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {

// Threads of this process whose name starts with `prefix` (the socket
// proxies are "weft-socks-<rank>" and "weft-sockr-<rank>").
int threadsNamed(const char* prefix) {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/comm";
    char name[32] = {};
    if (FILE* f = fopen(path.c_str(), "r")) {
      if (fgets(name, sizeof name, f) && strncmp(name, prefix, strlen(prefix)) == 0) ++n;
      fclose(f);
    }
  }
  closedir(d);
  return n;
}

class SocketProxyThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
    setenv("WEFT_BUFFSIZE", "65536", 1);
    setenv("WEFT_NCHANNELS", "4", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_SHM_DISABLE");
    unsetenv("WEFT_NCHANNELS");
  }
};

TEST_F(SocketProxyThreads, TwoPerRankWhateverThePeersAndChannels) {
  constexpr int n = 6;
  ASSERT_EQ(threadsNamed("weft-sock"), 0);
  {
    ThreadRanks ranks(n);
    ASSERT_EQ(ranks.status(), weftSuccess);
    uint64_t seed = 40;
    // AllToAll and grouped send/recv connect every pair: 2 x 5 connection
    // ends per rank on top of the ring's 2 x 4 channels.
    for (CollKind coll : {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::AllGather, CollKind::Broadcast,
                          CollKind::Reduce, CollKind::AllToAll, CollKind::SendRecv})
      for (size_t count : {size_t(1), size_t(5000), size_t(300000)}) {
        Scenario s;
        s.coll = coll;
        s.count = count;
        s.root = 1;
        s.seed = seed++;
        Inputs in = makeInputs(s, n);
        ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); }), "") << s.describe();
        EXPECT_EQ(threadsNamed("weft-socks-"), n) << s.describe();
        EXPECT_EQ(threadsNamed("weft-sockr-"), n) << s.describe();
      }
  }
  EXPECT_EQ(threadsNamed("weft-sock"), 0) << "proxy threads left after every communicator was destroyed";
}

}  // namespace
}  // namespace weft::test
