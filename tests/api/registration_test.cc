// weftMemAlloc / weftCommRegister with threads as ranks: the errors of bad
// input, and single-copy collectives (src/core/direct_comm.h) on registered
// buffers against expected sums, with the fallback to the FIFO path when a
// rank's buffer is not registered (or registered on another communicator).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <unistd.h>
#include <vector>

#include "src/core/comm.h"
#include "src/core/direct_comm.h"
#include "tests/collectives/thread_ranks.h"
#include "weft/weft.h"

namespace weft::test {
namespace {

class Registration : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every size single-copy: no threshold, and no ll protocol (which takes
    // small calls first).
    setenv("WEFT_DIRECT_MIN_BYTES", "1", 1);
    setenv("WEFT_PROTO", "simple", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    unsetenv("WEFT_DIRECT_MIN_BYTES");
    unsetenv("WEFT_PROTO");
  }
};

uint64_t directCalls(weftComm_t c) { return c->direct ? c->direct->callsRun : 0; }

TEST_F(Registration, MemAllocErrors) {
  void* p = nullptr;
  EXPECT_EQ(weftMemAlloc(nullptr, 10), weftInvalidArgument);
  EXPECT_EQ(weftMemAlloc(&p, 0), weftInvalidArgument);
  ASSERT_EQ(weftMemAlloc(&p, 1000), weftSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  EXPECT_EQ(static_cast<unsigned char*>(p)[999], 0);
  EXPECT_EQ(weftMemFree(p), weftSuccess);
  EXPECT_EQ(weftMemFree(p), weftInvalidArgument) << "freed twice";
  int local = 0;
  EXPECT_EQ(weftMemFree(&local), weftInvalidArgument) << "not from weftMemAlloc";
  EXPECT_EQ(weftMemFree(nullptr), weftSuccess);
}

TEST_F(Registration, RegisterErrors) {
  ThreadRanks a(2), b(2);
  ASSERT_EQ(a.status(), weftSuccess);
  ASSERT_EQ(b.status(), weftSuccess);
  void* mem = nullptr;
  ASSERT_EQ(weftMemAlloc(&mem, 1 << 16), weftSuccess);
  char* m = static_cast<char*>(mem);
  void *h = nullptr, *h2 = nullptr;
  EXPECT_EQ(weftCommRegister(a.comm(0), nullptr, 10, &h), weftInvalidArgument);
  EXPECT_EQ(weftCommRegister(a.comm(0), m, 0, &h), weftInvalidArgument);
  EXPECT_EQ(weftCommRegister(a.comm(0), m, 10, nullptr), weftInvalidArgument);
  EXPECT_EQ(weftCommRegister(a.comm(0), m + 4096, 1 << 16, &h), weftInvalidArgument) << "past the allocation";
  ASSERT_EQ(weftCommRegister(a.comm(0), m, 8192, &h), weftSuccess);
  EXPECT_EQ(weftCommRegister(a.comm(0), m + 4096, 8192, &h2), weftInvalidArgument) << "overlap";
  EXPECT_EQ(weftCommRegister(a.comm(0), m, 8192, &h2), weftInvalidArgument) << "the same range twice";
  ASSERT_EQ(weftCommRegister(b.comm(0), m, 8192, &h2), weftSuccess) << "another communicator may";
  EXPECT_EQ(weftCommDeregister(b.comm(0), h), weftInvalidArgument) << "a handle of another communicator";
  EXPECT_EQ(weftMemFree(mem), weftInvalidUsage) << "freed while registered";
  EXPECT_EQ(weftCommDeregister(a.comm(0), h), weftSuccess);
  EXPECT_EQ(weftCommDeregister(a.comm(0), h), weftInvalidArgument) << "deregistered twice";
  EXPECT_EQ(weftMemFree(mem), weftInvalidUsage) << "still registered on b";
  EXPECT_EQ(weftCommDeregister(b.comm(0), h2), weftSuccess);
  EXPECT_EQ(weftMemFree(mem), weftSuccess);
  EXPECT_EQ(weftCommDeregister(a.comm(0), nullptr), weftInvalidArgument);
}

// Each rank: in[i] = rank + 1 + i % 7; sums, blocks and gathers are exact.
struct RankBufs {
  float* send = nullptr;
  float* recv = nullptr;
  void* hs = nullptr;
  void* hr = nullptr;
};

RankBufs makeBufs(weftComm_t c, int rank, size_t sendElems, size_t recvElems, bool reg, bool weftMem) {
  RankBufs b;
  if (weftMem) {
    weftMemAlloc(reinterpret_cast<void**>(&b.send), sendElems * 4);
    weftMemAlloc(reinterpret_cast<void**>(&b.recv), recvElems * 4);
  } else {
    b.send = static_cast<float*>(aligned_alloc(64, (sendElems * 4 + 63) / 64 * 64));
    b.recv = static_cast<float*>(aligned_alloc(64, (recvElems * 4 + 63) / 64 * 64));
  }
  for (size_t i = 0; i < sendElems; i++) b.send[i] = float(rank + 1 + int(i % 7));
  if (reg) {
    weftCommRegister(c, b.send, sendElems * 4, &b.hs);
    weftCommRegister(c, b.recv, recvElems * 4, &b.hr);
  }
  return b;
}

void freeBufs(weftComm_t c, RankBufs& b, bool weftMem) {
  if (b.hs) weftCommDeregister(c, b.hs);
  if (b.hr) weftCommDeregister(c, b.hr);
  if (weftMem) {
    weftMemFree(b.send);
    weftMemFree(b.recv);
  } else {
    free(b.send);
    free(b.recv);
  }
}

// Runs AllReduce, ReduceScatter, AllGather on n thread ranks; rank r
// registers when reg(r). Returns the failures; *direct: calls that ran single-copy on rank 0.
std::string runThree(ThreadRanks& t, size_t count, bool weftMem, bool (*reg)(int), uint64_t* direct) {
  const int n = t.size();
  const uint64_t before = directCalls(t.comm(0));
  std::string out = t.run([&](int r) -> std::string {
    weftComm_t c = t.comm(r);
    std::string err;
    RankBufs ar = makeBufs(c, r, count, count, reg(r), weftMem);
    if (weftAllReduce(ar.send, ar.recv, count, weftFloat32, weftSum, c, nullptr) != weftSuccess) err += "allreduce failed;";
    for (size_t i = 0; i < count && err.empty(); i++) {
      float want = float(n * (n + 1) / 2 + n * int(i % 7));
      if (ar.recv[i] != want) err += "allreduce rank " + std::to_string(r) + " [" + std::to_string(i) + "];";
    }
    freeBufs(c, ar, weftMem);
    RankBufs rs = makeBufs(c, r, count * n, count, reg(r), weftMem);
    if (weftReduceScatter(rs.send, rs.recv, count, weftFloat32, weftSum, c, nullptr) != weftSuccess) err += "rs failed;";
    for (size_t i = 0; i < count && err.empty(); i++) {
      float want = float(n * (n + 1) / 2 + n * int((size_t(r) * count + i) % 7));
      if (rs.recv[i] != want) err += "reducescatter rank " + std::to_string(r) + " [" + std::to_string(i) + "];";
    }
    freeBufs(c, rs, weftMem);
    RankBufs ag = makeBufs(c, r, count, count * n, reg(r), weftMem);
    if (weftAllGather(ag.send, ag.recv, count, weftFloat32, c, nullptr) != weftSuccess) err += "ag failed;";
    for (size_t i = 0; i < count * n && err.empty(); i++) {
      float want = float(int(i / count) + 1 + int((i % count) % 7));
      if (ag.recv[i] != want) err += "allgather rank " + std::to_string(r) + " [" + std::to_string(i) + "];";
    }
    freeBufs(c, ag, weftMem);
    return err;
  });
  *direct = directCalls(t.comm(0)) - before;
  return out;
}

bool everyone(int) { return true; }
bool notRank1(int r) { return r != 1; }
bool nobody(int) { return false; }

TEST_F(Registration, SingleCopyOnRegisteredBuffers) {
  for (int n : {2, 3}) {
    ThreadRanks t(n);
    ASSERT_EQ(t.status(), weftSuccess);
    for (bool weftMem : {true, false})
      for (size_t count : {size_t(1), size_t(1000), size_t(100003)}) {
        uint64_t direct = 0;
        EXPECT_EQ(runThree(t, count, weftMem, everyone, &direct), "") << n << " ranks, count " << count;
        EXPECT_EQ(direct, 3u) << "every call single-copy: " << n << " ranks, count " << count;
      }
  }
}

TEST_F(Registration, UnregisteredRankFallsBackForAll) {
  ThreadRanks t(3);
  ASSERT_EQ(t.status(), weftSuccess);
  uint64_t direct = 0;
  EXPECT_EQ(runThree(t, 5000, true, notRank1, &direct), "");
  EXPECT_EQ(direct, 0u) << "one rank unregistered: FIFO path everywhere";
  EXPECT_EQ(runThree(t, 5000, true, nobody, &direct), "");
  EXPECT_EQ(direct, 0u);
}

TEST_F(Registration, RegisteredOnAnotherCommunicatorFallsBack) {
  ThreadRanks a(2), b(2);
  ASSERT_EQ(a.status(), weftSuccess);
  ASSERT_EQ(b.status(), weftSuccess);
  const size_t count = 4096;
  const uint64_t before = directCalls(b.comm(0));
  std::string out = b.run([&](int r) -> std::string {
    RankBufs x = makeBufs(a.comm(r), r, count, count, true, true);  // registered on a
    std::string err;
    if (weftAllReduce(x.send, x.recv, count, weftFloat32, weftSum, b.comm(r), nullptr) != weftSuccess) err = "failed";
    for (size_t i = 0; i < count && err.empty(); i++)
      if (x.recv[i] != float(3 + 2 * int(i % 7))) err = "wrong sum";
    freeBufs(a.comm(r), x, true);
    return err;
  });
  EXPECT_EQ(out, "");
  EXPECT_EQ(directCalls(b.comm(0)), before);
}

TEST_F(Registration, DeregisterWhileInUseIsRefused) {
  ThreadRanks t(2);
  ASSERT_EQ(t.status(), weftSuccess);
  const size_t count = 1 << 16;
  std::string out = t.run([&](int r) -> std::string {
    weftComm_t c = t.comm(r);
    RankBufs x = makeBufs(c, r, count, count, true, true);
    std::string err;
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));  // rank 0 waits in the handshake
    weftStream_t s = nullptr;
    weftHostStreamCreate(&s);
    weftAllReduce(x.send, x.recv, count, weftFloat32, weftSum, c, s);
    if (r == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      if (weftCommDeregister(c, x.hs) != weftInvalidUsage) err += "deregistering a buffer in use was not refused;";
    }
    if (weftHostStreamSynchronize(s) != weftSuccess) err += "allreduce failed;";
    weftHostStreamDestroy(s);
    for (size_t i = 0; i < count && err.empty(); i++)
      if (x.recv[i] != float(3 + 2 * int(i % 7))) err += "wrong sum;";
    freeBufs(c, x, true);
    return err;
  });
  EXPECT_EQ(out, "");
  EXPECT_EQ(directCalls(t.comm(0)), 1u);
}

// What two thread ranks got from one AllReduce in which rank 1 was held
// inside its steps (the test below).
struct StalledPeerOutcome {
  weftResult_t res[2] = {weftSuccess, weftSuccess};
  std::string why[2];
  int64_t afterReleaseMs = -1;  // from rank 1's release to its return
};

StalledPeerOutcome allReduceWithRank1HeldInItsSteps(bool weftMem, int64_t timeoutMs) {
  using Clock = std::chrono::steady_clock;
  StalledPeerOutcome o;
  ThreadRanks t(2);
  if (t.status() != weftSuccess || !t.comm(0)->direct || !t.comm(1)->direct) return o;
  for (int r = 0; r < 2; r++) t.comm(r)->timeoutMs = timeoutMs;  // after init: a slow init keeps its own bound
  std::mutex mu;
  std::condition_variable cv;
  bool held = false, freed = false;
  Clock::time_point released;
  t.comm(1)->direct->afterStep = [&] {
    std::unique_lock<std::mutex> lock(mu);
    if (held) return;  // the first step only
    held = true;
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return freed; });
    released = Clock::now();
  };
  const size_t count = 1 << 18;  // 1 MiB: several chunks in each rank's share
  RankBufs kept;
  t.run([&](int r) -> std::string {
    weftComm_t c = t.comm(r);
    RankBufs x = makeBufs(c, r, count, count, true, weftMem);
    o.res[r] = weftAllReduce(x.send, x.recv, count, weftFloat32, weftSum, c, nullptr);
    o.why[r] = weftGetLastError(c);
    std::lock_guard<std::mutex> lock(mu);
    if (r == 1) o.afterReleaseMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - released).count();
    if (r == 0 && !weftMem) {  // ordinary memory: deregistered, kept until the peer is out
      weftCommDeregister(c, x.hs);
      weftCommDeregister(c, x.hr);
      kept = x;
    } else {
      freeBufs(c, x, weftMem);
    }
    if (r == 0) {
      freed = true;
      cv.notify_all();
    }
    return "";
  });
  free(kept.send);
  free(kept.recv);
  return o;
}

// A rank that gives up on a single-copy call (its timeout at the closing
// barrier) returns while a slower peer is still inside its direct steps,
// and its caller then deregisters and frees its buffers. The slow peer, a
// thread of the same process that reads and writes those buffers at the
// owner's addresses, must neither fault on the freed memory nor return
// success: it ends with an error that names the rank that gave up, as soon
// as it reaches the closing barrier. Rank 1 is held after its first step
// (DirectAccess::afterStep) until rank 0 has timed out and freed.
TEST_F(Registration, PeerStillInStepsWhenAnotherTimesOutAndFreesEndsWithAnError) {
  constexpr int64_t kTimeoutMs = 1000;
  for (bool weftMem : {true, false}) {
    StalledPeerOutcome o = allReduceWithRank1HeldInItsSteps(weftMem, kTimeoutMs);
    const char* kind = weftMem ? "weftMemAlloc buffers: " : "ordinary buffers: ";
    EXPECT_EQ(o.res[0], weftTimeout) << kind << o.why[0];
    EXPECT_EQ(o.res[1], weftRemoteError) << kind << "the rank held in its steps: " << o.why[1];
    EXPECT_NE(o.why[1].find("rank 0"), std::string::npos) << kind << o.why[1];
    EXPECT_GE(o.afterReleaseMs, 0) << kind;
    EXPECT_LT(o.afterReleaseMs, kTimeoutMs) << kind << "the held rank's error comes at its next barrier, not at a timeout";
  }
}

// weft-tune --registered writes the single-copy threshold it measured
// (direct_min_bytes) into the tune file: communicators of the measured shape
// take it; WEFT_DIRECT_MIN_BYTES, where set, still wins; other shapes keep
// the setting's default.
TEST_F(Registration, TuneFileThresholdForItsShapeUnlessTheSettingIsSet) {
  char path[] = "/tmp/weft-direct-tune-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "measured.nranks 2\nmeasured.nhosts 1\ndirect_min_bytes 12345\n";
  ASSERT_EQ(write(fd, text, sizeof(text) - 1), ssize_t(sizeof(text) - 1));
  close(fd);
  setenv("WEFT_TUNE_FILE", path, 1);
  unsetenv("WEFT_DIRECT_MIN_BYTES");
  auto threshold = [](int n) -> uint64_t {
    ThreadRanks t(n);
    if (t.status() != weftSuccess || !t.comm(0)->direct) return 0;
    return t.comm(0)->direct->minBytes();
  };
  EXPECT_EQ(threshold(2), 12345u);
  EXPECT_EQ(threshold(3), 256u * 1024) << "another shape: the default";
  setenv("WEFT_DIRECT_MIN_BYTES", "4096", 1);
  EXPECT_EQ(threshold(2), 4096u) << "the setting given wins";
  unsetenv("WEFT_TUNE_FILE");
  unlink(path);
}

}  // namespace
}  // namespace weft::test
