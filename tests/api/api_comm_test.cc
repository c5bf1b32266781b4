// Communicator behaviour through the public API: CommSplit, grouped
// point-to-point, host streams, Finalize and Destroy.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/collectives/collective_check.h"
#include "src/core/comm.h"
#include "tests/collectives/thread_ranks.h"
#include "weft/weft.h"

namespace weft::test {
namespace {

class ApiComm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("WEFT_TIMEOUT_MS", "20000", 1);
    setenv("WEFT_BUFFSIZE", "65536", 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  }
};

std::string rc(const char* what, weftResult_t got, weftResult_t want = weftSuccess) {
  if (got == want) return "";
  return std::string(what) + ": " + weftGetErrorString(got) + " (wanted " + weftGetErrorString(want) + "); ";
}

// color = rank % 2, key = -rank: two groups, each in reverse parent order;
// then the groups run different collectives at the same time.
TEST_F(ApiComm, SplitByColorReversedByKeyGroupsRunConcurrently) {
  constexpr int n = 4;
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  std::vector<weftComm_t> sub(n, nullptr);
  std::string err = ranks.run([&](int r) {
    std::string e = rc("split", weftCommSplit(ranks.comm(r), r % 2, -r, &sub[r], nullptr));
    if (!sub[r]) return e + "rank " + std::to_string(r) + ": no new communicator; ";
    int count = 0, newRank = -1;
    e += rc("count", weftCommCount(sub[r], &count));
    e += rc("rank", weftCommUserRank(sub[r], &newRank));
    // Groups {0,2} and {1,3}; the larger parent rank has the smaller key.
    const int want = r < 2 ? 1 : 0;
    if (count != 2 || newRank != want)
      e += "rank " + std::to_string(r) + ": size " + std::to_string(count) + " rank " + std::to_string(newRank) +
           ", want size 2 rank " + std::to_string(want) + "; ";
    if (!e.empty()) return e;
    Scenario s;
    s.coll = r % 2 == 0 ? CollKind::AllReduce : CollKind::AllGather;
    s.count = 30011;  // several FIFO slots
    s.seed = 9 + r % 2;
    for (int it = 0; it < 3 && e.empty(); it++) e += runAndCheck(sub[r], newRank, 2, s);
    // The parent keeps working beside its children.
    if (e.empty()) {
      Scenario p;
      p.coll = CollKind::AllReduce;
      p.count = 1001;
      p.seed = 3;
      e += runAndCheck(ranks.comm(r), r, n, p);
    }
    e += rc("destroy", weftCommDestroy(sub[r]));
    return e;
  });
  EXPECT_EQ(err, "");
}

TEST_F(ApiComm, SplitNoColorGivesNullAndOthersGoOn) {
  constexpr int n = 3;
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  std::string err = ranks.run([&](int r) {
    weftComm_t sub = reinterpret_cast<weftComm_t>(0x1);
    std::string e = rc("split", weftCommSplit(ranks.comm(r), r == 0 ? WEFT_SPLIT_NOCOLOR : 7, 0, &sub, nullptr));
    if (r == 0) return e + (sub == nullptr ? "" : "WEFT_SPLIT_NOCOLOR gave a communicator; ");
    if (!sub) return e + "rank " + std::to_string(r) + ": no communicator; ";
    int count = 0, newRank = -1;
    weftCommCount(sub, &count);
    weftCommUserRank(sub, &newRank);
    if (count != 2 || newRank != r - 1) e += "size/rank " + std::to_string(count) + "/" + std::to_string(newRank) + "; ";
    Scenario s;
    s.coll = CollKind::ReduceScatter;
    s.count = 777;
    s.seed = 11;
    if (e.empty()) e += runAndCheck(sub, newRank, 2, s);
    e += rc("destroy", weftCommDestroy(sub));
    return e;
  });
  EXPECT_EQ(err, "");
}

TEST_F(ApiComm, SplitRejectsBadColorOnEveryRank) {
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.status(), weftSuccess);
  std::string err = ranks.run([&](int r) {
    weftComm_t sub = nullptr;
    std::string e = rc("color -5", weftCommSplit(ranks.comm(r), -5, 0, &sub, nullptr), weftInvalidArgument);
    e += rc("null newcomm", weftCommSplit(ranks.comm(r), 0, 0, nullptr, nullptr), weftInvalidArgument);
    return e;
  });
  EXPECT_EQ(err, "");
  weftComm_t sub;
  EXPECT_EQ(weftCommSplit(nullptr, 0, 0, &sub, nullptr), weftInvalidArgument);
}

// Every rank sends to every other rank (and itself) in one group, each pair
// with its own size, so no two transfers look alike. Without the group this
// pattern would deadlock on the first blocking send.
TEST_F(ApiComm, GroupedSendRecvToAllPeersOfDifferentSizes) {
  constexpr int n = 4;
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  auto count = [](int from, int to) { return size_t(5000) * (from + 1) + 313 * to + 1; };
  auto value = [](int from, int to, size_t i) { return int32_t(from * 1000003 + to * 7919 + int32_t(i)); };
  for (bool withSelf : {false, true}) {
    std::string err = ranks.run([&](int r) {
      std::vector<std::vector<int32_t>> out(n), in(n);
      for (int p = 0; p < n; p++) {
        out[p].resize(count(r, p));
        for (size_t i = 0; i < out[p].size(); i++) out[p][i] = value(r, p, i);
        in[p].assign(count(p, r) + 16, -1);
      }
      weftComm_t c = ranks.comm(r);
      std::string e = rc("group start", weftGroupStart());
      for (int k = 1; k <= n; k++) {
        // Peers in a rank-dependent order: the group must match them anyway.
        int p = (r + k) % n;
        if (p == r && !withSelf) continue;
        e += rc("send", weftSend(out[p].data(), out[p].size(), weftInt32, p, c, nullptr));
        e += rc("recv", weftRecv(in[p].data(), count(p, r), weftInt32, p, c, nullptr));
      }
      e += rc("group end", weftGroupEnd());
      for (int p = 0; p < n && e.empty(); p++) {
        if (p == r && !withSelf) continue;
        for (size_t i = 0; i < count(p, r); i++)
          if (in[p][i] != value(p, r, i)) {
            e += "rank " + std::to_string(r) + " from " + std::to_string(p) + " element " + std::to_string(i) +
                 " wrong; ";
            break;
          }
        for (size_t i = count(p, r); i < in[p].size(); i++)
          if (in[p][i] != -1) {
            e += "rank " + std::to_string(r) + " from " + std::to_string(p) + ": written past the end; ";
            break;
          }
      }
      return e;
    });
    EXPECT_EQ(err, "") << (withSelf ? "with" : "without") << " self-sends";
  }
}

// Several collectives queued on a host stream run in order, asynchronously.
TEST_F(ApiComm, HostStreamQueueQuerySynchronize) {
  constexpr int n = 3, calls = 4;
  constexpr size_t count = 50000;
  ThreadRanks ranks(n);
  ASSERT_EQ(ranks.status(), weftSuccess);
  std::string err = ranks.run([&](int r) {
    weftComm_t c = ranks.comm(r);
    weftStream_t stream = nullptr;
    std::string e = rc("stream create", weftHostStreamCreate(&stream));
    if (!e.empty()) return e;
    // A chain: call k reduces call k-1's result, so the order matters.
    std::vector<std::vector<float>> buf(calls + 1, std::vector<float>(count, 0.0f));
    for (size_t i = 0; i < count; i++) buf[0][i] = float((i % 13) + r);
    for (int k = 0; k < calls; k++)
      e += rc("enqueue", weftAllReduce(buf[k].data(), buf[k + 1].data(), count, weftFloat32, weftSum, c, stream));
    weftResult_t q = weftHostStreamQuery(stream);
    if (q != weftInProgress && q != weftSuccess) e += rc("query", q);
    e += rc("synchronize", weftHostStreamSynchronize(stream));
    e += rc("query after sync", weftHostStreamQuery(stream));
    // Sum over ranks of (i%13 + r) = n*(i%13) + n(n-1)/2; each further call multiplies by n.
    for (size_t i = 0; i < count && e.empty(); i++) {
      double want = n * double(i % 13) + n * (n - 1) / 2.0;
      for (int k = 1; k < calls; k++) want *= n;
      if (buf[calls][i] != float(want)) e += "element " + std::to_string(i) + " = " + std::to_string(buf[calls][i]) + "; ";
    }
    e += rc("stream destroy", weftHostStreamDestroy(stream));
    return e;
  });
  EXPECT_EQ(err, "");
}

// Finalize waits for queued work: the results are there when it returns,
// before anyone synchronised the stream. Then Destroy frees the handle.
TEST_F(ApiComm, FinalizeDrainsQueuedWorkThenDestroy) {
  constexpr int n = 2;
  constexpr size_t count = 200000;
  std::vector<weftComm_t> comms(n, nullptr);
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess);
  std::vector<std::string> errs(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; r++)
    threads.emplace_back([&, r] {
      std::string& e = errs[r];
      weftStream_t stream;
      e += rc("stream", weftHostStreamCreate(&stream));
      std::vector<double> a(count, r + 1.0), b(count, 0.0);
      for (int k = 0; k < 3; k++) e += rc("enqueue", weftAllReduce(a.data(), b.data(), count, weftFloat64, weftMax, comms[r], stream));
      e += rc("finalize", weftCommFinalize(comms[r]));
      if (b.front() != n || b.back() != n) e += "finalize returned before the queued AllReduces finished; ";
      e += rc("destroy", weftCommDestroy(comms[r]));
      int x;
      e += rc("count after destroy", weftCommCount(comms[r], &x), weftInvalidUsage);
      e += rc("stream sync", weftHostStreamSynchronize(stream));
      e += rc("stream destroy", weftHostStreamDestroy(stream));
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; r++) EXPECT_EQ(errs[r], "") << "rank " << r;
}

// A timeout claims the communicator's error before its diagnosis (which waits
// seconds for other ranks); a peer that gave up first and left in that time
// must not become the reported cause: the timeout's text, once ready, is.
TEST_F(ApiComm, TimeoutClaimedBeforeItsDiagnosisKeepsItsOwnText) {
  constexpr int n = 2;
  std::vector<weftComm_t> comms(n, nullptr);
  ASSERT_EQ(weftCommInitAll(comms.data(), n, nullptr), weftSuccess);
  weftComm_t c = comms[0];
  c->claimAsyncError(weftTimeout, "rank 0: a call timed out");
  c->setAsyncError(weftRemoteError, "rank 1 is gone");
  EXPECT_EQ(c->getAsyncError(), weftTimeout);
  EXPECT_STREQ(weftGetLastError(c), "rank 0: a call timed out");
  c->setAsyncError(weftTimeout, "rank 0: AllReduce made no progress [rank 2 not answering]");
  EXPECT_STREQ(weftGetLastError(c), "rank 0: AllReduce made no progress [rank 2 not answering]");
  // Once the text is in, the first error stays.
  c->setAsyncError(weftTimeout, "a later timeout");
  EXPECT_STREQ(weftGetLastError(c), "rank 0: AllReduce made no progress [rank 2 not answering]");
  for (weftComm_t comm : comms) weftCommAbort(comm);
}


// One rank in place returns without running a plan: the data stays as it
// was, bit for bit, for every collective; PreMulSum still scales; a bad
// argument is still refused first.
TEST_F(ApiComm, OneRankInPlaceKeepsTheDataAndStillScalesAndChecks) {
  weftComm_t comm = nullptr;
  ASSERT_EQ(weftCommInitAll(&comm, 1, nullptr), weftSuccess);
  constexpr size_t n = 1000;
  std::vector<float> data(n), before;
  uint32_t seed = 12345;
  for (float& x : data) x = float((seed = seed * 1664525u + 1013904223u) >> 8) / float(1 << 24) * 2 - 1;
  before = data;
  float* p = data.data();
  EXPECT_EQ(rc("AllReduce sum", weftAllReduce(p, p, n, weftFloat32, weftSum, comm, nullptr)) +
                rc("AllReduce avg", weftAllReduce(p, p, n, weftFloat32, weftAvg, comm, nullptr)) +
                rc("ReduceScatter", weftReduceScatter(p, p, n, weftFloat32, weftMax, comm, nullptr)) +
                rc("AllGather", weftAllGather(p, p, n, weftFloat32, comm, nullptr)) +
                rc("Broadcast", weftBroadcast(p, p, n, weftFloat32, 0, comm, nullptr)) +
                rc("Reduce", weftReduce(p, p, n, weftFloat32, weftProd, 0, comm, nullptr)) +
                rc("AlltoAll", weftAlltoAll(p, p, n, weftFloat32, comm, nullptr)),
            "");
  EXPECT_EQ(memcmp(data.data(), before.data(), n * sizeof(float)), 0);

  float three = 3;
  weftRedOp_t times3;
  ASSERT_EQ(weftRedOpCreatePreMulSum(&times3, &three, weftFloat32, weftScalarHostImmediate, comm), weftSuccess);
  ASSERT_EQ(weftAllReduce(p, p, n, weftFloat32, times3, comm, nullptr), weftSuccess);
  for (size_t i = 0; i < n; i++) ASSERT_EQ(data[i], float(double(before[i]) * 3)) << "element " << i;

  EXPECT_EQ(weftAllReduce(p, p, n, static_cast<weftDataType_t>(99), weftSum, comm, nullptr), weftInvalidArgument);
  EXPECT_EQ(weftBroadcast(p, p, n, weftFloat32, 1, comm, nullptr), weftInvalidArgument);
  EXPECT_EQ(weftRedOpDestroy(times3, comm), weftSuccess);
  EXPECT_EQ(weftCommDestroy(comm), weftSuccess);
}

}  // namespace
}  // namespace weft::test
