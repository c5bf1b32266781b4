// A socket-transport receiving end made while its rank already sends to the
// same peer reads socket 0 of that sending end, and the peer writes into
// the one it accepted (WEFT_SOCKET_BIDIR): socket 0, which carries every
// small message, is one TCP connection for both directions. Thread ranks
// over sockets alone (shared memory off), 2 to 4 of them, run every
// collective in and out of place at odd counts with and without it and
// with 1 to 3 sockets per connection, each output checked against the
// float64 / exact reference with poisoned buffers around it
// (tests/collectives/collective_check.h); the sockets are counted to show
// that the sharing happens, and AllToAll batches that close and reopen
// connections show that a reopened end does not read a stream its
// predecessor left behind.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <set>
#include <string>

#include "collective_check.h"
#include "thread_ranks.h"

namespace weft::test {
namespace {


struct TypeOp {
  weftDataType_t type;
  weftRedOp_t op;
};
constexpr TypeOp kTypeOps[] = {{weftFloat32, weftSum}, {weftFloat64, weftSum},  {weftInt8, weftMax},
                               {weftFloat16, weftAvg},  {weftUint64, weftProd}, {weftBfloat16, weftMin},
                               {weftInt32, weftSum}};

// Distinct sockets this process holds (a duplicated descriptor is the same
// socket).
size_t socketsOpen() {
  std::set<std::string> inodes;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    char target[64] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)).rfind("socket:", 0) == 0) inodes.insert(target);
  }
  closedir(d);
  return inodes.size();
}

std::string noAsyncError(weftComm_t comm, int rank) {
  weftResult_t e = weftSuccess;
  if (weftCommGetAsyncError(comm, &e) != weftSuccess || e != weftSuccess)
    return "rank " + std::to_string(rank) + ": asynchronous error " + std::to_string(int(e)) + "\n";
  return "";
}

class SocketBidirEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_SHM_DISABLE", "1", 1);
    setenv("WEFT_TIMEOUT_MS", "60000", 1);
  }
  void TearDown() override {
    for (const char* v :
         {"WEFT_SHM_DISABLE", "WEFT_SOCKET_BIDIR", "WEFT_ALLTOALL_MAX_PEERS", "WEFT_NCHANNELS", "WEFT_SOCKET_NSOCKS"})
      unsetenv(v);
  }

  // Every collective at every count over the ranks; then no rank has an
  // asynchronous error.
  static void runAll(ThreadRanks& ranks, std::initializer_list<size_t> counts, uint64_t seed) {
    const int n = ranks.size();
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
          s.root = (static_cast<int>(k) + 1) % n;
          s.seed = seed++;
          Inputs in = makeInputs(s, n);
          ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); }), "") << s.describe();
        }
    EXPECT_EQ(ranks.run([&](int r) { return noAsyncError(ranks.comm(r), r); }), "");
  }
};

class SocketBidir : public SocketBidirEnv, public ::testing::WithParamInterface<int> {};
// Batches of one peer need 3 or more ranks.
class SocketBidirBatches : public SocketBidir {};

// Small pieces (the executor's own reads and writes), pieces across
// sockets (300001 elements: 512 KB slots cut in two) and odd counts.
TEST_P(SocketBidir, EveryCollectiveWithAndWithoutSharing) {
  for (const char* bidir : {"1", "0"}) {
    setenv("WEFT_SOCKET_BIDIR", bidir, 1);
    SCOPED_TRACE(std::string("WEFT_SOCKET_BIDIR=") + bidir);
    ThreadRanks ranks(GetParam());
    ASSERT_EQ(ranks.status(), weftSuccess);
    runAll(ranks, {1, 1023, 40001, 300001}, 700);
  }
}

// One socket per connection (wholly shared) and three (socket 0 shared,
// the others per direction), in place and out of place.
TEST_P(SocketBidir, OneAndThreeSocketsPerConnection) {
  setenv("WEFT_SOCKET_BIDIR", "1", 1);
  for (const char* nsocks : {"1", "3"}) {
    setenv("WEFT_SOCKET_NSOCKS", nsocks, 1);
    SCOPED_TRACE(std::string("WEFT_SOCKET_NSOCKS=") + nsocks);
    ThreadRanks ranks(GetParam());
    ASSERT_EQ(ranks.status(), weftSuccess);
    runAll(ranks, {7, 65537, 400003}, 800);
  }
}

// A 2-rank AllReduce connects both directions between the pair: shared,
// their socket 0 is one TCP connection instead of two, whatever the number
// of sockets per connection.
TEST_F(SocketBidirEnv, SharingSavesOneConnectionPerPair) {
  setenv("WEFT_NCHANNELS", "1", 1);
  for (const char* nsocks : {"1", "2", "3"}) {
    setenv("WEFT_SOCKET_NSOCKS", nsocks, 1);
    SCOPED_TRACE(std::string("WEFT_SOCKET_NSOCKS=") + nsocks);
    size_t open[2] = {0, 0};
    for (int bidir = 0; bidir < 2; ++bidir) {
      setenv("WEFT_SOCKET_BIDIR", bidir ? "1" : "0", 1);
      const size_t before = socketsOpen();
      ThreadRanks ranks(2);
      ASSERT_EQ(ranks.status(), weftSuccess);
      Scenario s;
      s.count = 300001;
      s.seed = 11;
      Inputs in = makeInputs(s, 2);
      ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, 2, s, &in); }), "");
      const size_t after = socketsOpen();
      ASSERT_GE(after, before);
      open[bidir] = after - before;  // the bootstrap's sockets and the data sockets
    }
    // Both ends of every connection are in this process: one connection
    // fewer is two sockets fewer; the bootstrap's are the same in both runs.
    EXPECT_EQ(open[0] - open[1], 2u) << "apart " << open[0] << ", shared " << open[1];
  }
  unsetenv("WEFT_SOCKET_NSOCKS");
}

// AllToAll batches of one peer close and reopen connections between calls:
// a reopened receiving end must get sockets of its own, not the ones whose
// other direction its predecessor read (a stale close marker waits there).
TEST_P(SocketBidirBatches, ConnectionsClosedAndReopenedBetweenBatches) {
  setenv("WEFT_ALLTOALL_MAX_PEERS", "1", 1);
  setenv("WEFT_SOCKET_BIDIR", "1", 1);
  ThreadRanks ranks(GetParam());
  ASSERT_EQ(ranks.status(), weftSuccess);
  const int n = GetParam();
  uint64_t seed = 900;
  for (int round = 0; round < 3; ++round)
    for (CollKind coll : {CollKind::AllToAll, CollKind::SendRecv, CollKind::AllReduce, CollKind::AllToAll}) {
      Scenario s;
      s.coll = coll;
      s.count = round == 1 ? 70001 : 33;
      s.type = round == 2 ? weftFloat64 : weftFloat32;
      s.seed = seed++;
      Inputs in = makeInputs(s, n);
      ASSERT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); }), "") << s.describe();
    }
  EXPECT_EQ(ranks.run([&](int r) { return noAsyncError(ranks.comm(r), r); }), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, SocketBidir, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });
INSTANTIATE_TEST_SUITE_P(Ranks, SocketBidirBatches, ::testing::Values(3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace weft::test
