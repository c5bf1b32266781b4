// Every collective over weft's real IB transport (ib_connection.cc and the
// rest of transports/ib), on the loopback verbs provider: ranks as threads
// and as processes, one or several QPs per connection, one or two ports,
// IB and RoCE addressing, completions delayed and reordered across QPs.
// Results are checked against references on random data.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ibloop_env.h"
#include "tests/collectives/collective_check.h"
#include "tests/collectives/thread_ranks.h"
#include "tests/process/process_ranks.h"

namespace weft::test {
namespace {

IbloopProcessEnv ibloopEnv;

struct TypeOp {
  weftDataType_t type;
  weftRedOp_t op;
};
const TypeOp kTypeOps[] = {{weftFloat32, weftSum}, {weftBfloat16, weftAvg}, {weftInt32, weftMax}};

bool reduces(CollKind c) { return c == CollKind::AllReduce || c == CollKind::ReduceScatter || c == CollKind::Reduce; }

// With WEFT_BUFFSIZE=65536 (8 KiB slots), 20011 elements cross many slots,
// and each slot is more than one provider packet.
std::vector<Scenario> scenarios(int n, uint64_t seed) {
  std::vector<Scenario> out;
  for (CollKind coll : kAllColls)
    for (const TypeOp& to : kTypeOps)
      for (int place = 0; place < (hasInPlace(coll) ? 2 : 1); place++)
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(20011)}) {
          Scenario s;
          s.coll = coll;
          s.type = to.type;
          s.op = reduces(coll) ? to.op : weftSum;
          s.inPlace = place == 1;
          s.count = count;
          s.seed = seed++;
          s.root = static_cast<int>(s.seed % n);
          out.push_back(s);
        }
  return out;
}

// One variant of the provider / transport set-up.
struct Setup {
  const char* name;
  const char* devices;  // LOOPBACK_VERBS_DEVICES
  int qps;              // WEFT_IB_QPS_PER_CONNECTION
  const char* faults;   // LOOPBACK_VERBS_FAULTS: only timing changes here
  const char* buffsize = "65536";  // WEFT_BUFFSIZE
};
const Setup kSetups[] = {
    {"OneQp", "lbv0:1:IB", 1, ""},
    {"FourQpsTwoPorts", "lbv0:2:IB", 4, ""},
    {"RoCE", "lbv0:1:RoCE,lbv1:1:RoCE", 2, ""},
    {"DelayedReorderedCompletions", "lbv0:1:IB", 3, "delay_us=300,reorder=1,seed=7"},
    // The most QPs a connection may have, default-size slots (512 KiB).
    {"SixteenQpsDefaultSlots", "lbv0:1:IB", 16, "", nullptr},
};

void applySetup(const Setup& s) {
  setenv("LOOPBACK_VERBS_DEVICES", s.devices, 1);
  setenv("WEFT_IB_QPS_PER_CONNECTION", std::to_string(s.qps).c_str(), 1);
  setenv("LOOPBACK_VERBS_FAULTS", s.faults, 1);
  if (s.buffsize) setenv("WEFT_BUFFSIZE", s.buffsize, 1);
  else unsetenv("WEFT_BUFFSIZE");
  setenv("WEFT_TIMEOUT_MS", "30000", 1);
}

struct Case {
  int nranks;
  int setup;  // into kSetups
};
std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(kSetups[info.param.setup].name) + "_" + std::to_string(info.param.nranks) + "ranks";
}

class IbloopThreads : public ::testing::TestWithParam<Case> {};

TEST_P(IbloopThreads, EveryCollectiveChecked) {
  const Case c = GetParam();
  applySetup(kSetups[c.setup]);
  const long logStart = logFileEnd();
  {
    ThreadRanks ranks(c.nranks);
    ASSERT_EQ(ranks.status(), weftSuccess) << weftGetLastError(nullptr);
    for (const Scenario& s : scenarios(c.nranks, 100 + c.nranks)) {
      Inputs in = makeInputs(s, c.nranks);
      std::string err = ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, c.nranks, s, &in); });
      ASSERT_EQ(err, "") << s.describe();
    }
    for (int r = 0; r < c.nranks; ++r) {
      weftResult_t async = weftSuccess;
      weftCommGetAsyncError(ranks.comm(r), &async);
      EXPECT_EQ(async, weftSuccess) << "rank " << r;
    }
  }
  const std::string log = logTextSince(logStart);
  EXPECT_NE(log.find("via NET/IB/lbv"), std::string::npos) << log;
  EXPECT_EQ(log.find("via NET/Socket"), std::string::npos) << log;
  if (kSetups[c.setup].qps > 1) EXPECT_NE(log.find("QPs"), std::string::npos) << log;
  // RoCE: the GID type comes from ibv_query_gid_ex (no sysfs for these
  // devices), so the automatic choice takes the v2 IPv4-mapped entry.
  if (std::string(kSetups[c.setup].devices).find("RoCE") != std::string::npos)
    EXPECT_NE(log.find("GID auto: RoCE v2 IPv4-mapped, index 1"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Ibloop, IbloopThreads,
                         ::testing::Values(Case{2, 0}, Case{3, 0}, Case{4, 1}, Case{3, 2}, Case{4, 3}, Case{3, 4}),
                         caseName);

// In this binary rather than with the process faults: those fork ranks
// from a process that has not loaded the provider yet (fork state, devices).
constexpr size_t kFaultCount = 20011;
// Thread ranks share one process, so a fault there hits every rank's
// connections at once: each call must still end in an error, in bounds.
TEST(IbloopThreadFaults, ErrorCompletionEndsEveryRankInBounds) {
  setenv("LOOPBACK_VERBS_DEVICES", "lbv0:1:IB", 1);
  setenv("LOOPBACK_VERBS_FAULTS", "wc_status=retry,wc_after=100", 1);
  setenv("WEFT_BUFFSIZE", "65536", 1);
  // The ranks whose own connections did not fail learn of it by their
  // timeout (no process ends to tell them).
  setenv("WEFT_TIMEOUT_MS", "3000", 1);
  const int64_t start = nowMs();
  std::vector<int> codes(3, -1);
  {
    ThreadRanks ranks(3);
    ASSERT_EQ(ranks.status(), weftSuccess);
    ranks.run([&](int r) {
      std::vector<float> send(kFaultCount, float(r + 1)), recv(kFaultCount);
      codes[r] = 0;
      for (int it = 0; it < 200 && codes[r] == 0; ++it) {
        if (weftAllReduce(send.data(), recv.data(), kFaultCount, weftFloat32, weftSum, ranks.comm(r), nullptr) !=
            weftSuccess)
          codes[r] = 10;
        else if (recv[kFaultCount - 1] != 6.0f)
          codes[r] = 11;
      }
      return std::string();
    });
  }  // destroys the communicators: bounded too
  setenv("LOOPBACK_VERBS_FAULTS", "", 1);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(codes[r], 10) << "rank " << r;
  EXPECT_LT(nowMs() - start, 25000);
}

// Two equally close NICs (no topology places them): the ranks of the host
// start on different ones and spread their channels over both (rails);
// WEFT_IB_MAX_NICS=1 keeps each rank on one.
std::string railsLog(const char* maxNics) {
  applySetup(kSetups[0]);
  setenv("LOOPBACK_VERBS_DEVICES", "lbv0:1:IB,lbv1:1:IB", 1);
  setenv("WEFT_NCHANNELS", "2", 1);
  setenv("WEFT_CALL_CHANNELS", "2", 1);
  setenv("WEFT_IB_MAX_NICS", maxNics, 1);
  const long logStart = logFileEnd();
  {
    ThreadRanks ranks(2);
    EXPECT_EQ(ranks.status(), weftSuccess) << weftGetLastError(nullptr);
    for (CollKind coll : {CollKind::AllReduce, CollKind::AllGather}) {
      Scenario s;
      s.coll = coll;
      s.count = 20011;
      s.seed = 77;
      Inputs in = makeInputs(s, 2);
      EXPECT_EQ(ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, 2, s, &in); }), "") << s.describe();
    }
  }
  unsetenv("WEFT_NCHANNELS");
  unsetenv("WEFT_CALL_CHANNELS");
  unsetenv("WEFT_IB_MAX_NICS");
  return logTextSince(logStart);
}

TEST(IbloopRails, ChannelsSpreadOverEquallyCloseNics) {
  const std::string log = railsLog("0");
  for (const char* line : {"rank 0 channel 0 uses lbv0:1", "rank 0 channel 1 uses lbv1:1",
                           "rank 1 channel 0 uses lbv1:1", "rank 1 channel 1 uses lbv0:1", "2 rails over the channels",
                           "local rank 1 starts at lbv1:1"})
    EXPECT_NE(log.find(line), std::string::npos) << line << "\n" << log;
  EXPECT_EQ(log.find("via NET/Socket"), std::string::npos) << log;
}

TEST(IbloopRails, CapOfOneNicKeepsEachRankOnItsOwn) {
  const std::string log = railsLog("1");
  for (const char* line : {"rank 0 channel 1 uses lbv0:1", "rank 1 channel 0 uses lbv1:1",
                           "rank 1 channel 1 uses lbv1:1", "capped by WEFT_IB_MAX_NICS=1"})
    EXPECT_NE(log.find(line), std::string::npos) << line << "\n" << log;
  EXPECT_EQ(log.find("rank 0 channel 1 uses lbv1:1"), std::string::npos) << log;
}

// Threads of this process whose name starts with `prefix`.
int threadsNamed(const std::string& prefix) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name) && name.rfind(prefix, 0) == 0) n++;
  }
  return n;
}

// The completion queues the provider holds (it counts them for tests).
int liveCqs() {
  void* lib = dlopen(LOOPBACK_VERBS_LIB, RTLD_NOW | RTLD_NOLOAD);
  auto count = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "loopback_verbs_live_cqs")) : nullptr;
  int n = count ? count() : -1;
  if (lib) dlclose(lib);
  return n;
}

// Every connection of a rank on a device is progressed by one thread and
// completes into one queue: an AllToAll connects each of 4 ranks to 3
// peers in both directions on two channels (48 connection ends), served by
// 4 proxy threads polling 4 completion queues.
TEST(IbloopProxy, OneProgressThreadPerRankServesEveryConnection) {
  applySetup(kSetups[0]);
  setenv("WEFT_NCHANNELS", "2", 1);
  const int n = 4;
  {
    ThreadRanks ranks(n);
    ASSERT_EQ(ranks.status(), weftSuccess) << weftGetLastError(nullptr);
    for (CollKind coll : {CollKind::AllReduce, CollKind::AllToAll}) {
      Scenario s;
      s.coll = coll;
      s.count = 20011;
      s.seed = 9;
      Inputs in = makeInputs(s, n);
      std::string err = ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); });
      ASSERT_EQ(err, "") << s.describe();
    }
    EXPECT_EQ(threadsNamed("weft-ib-"), n);
    EXPECT_EQ(liveCqs(), n);
  }
  unsetenv("WEFT_NCHANNELS");
  EXPECT_EQ(threadsNamed("weft-ib-"), 0) << "proxy threads outlived their connections";
  EXPECT_EQ(liveCqs(), 0) << "completion queues outlived their connections";
}

// A rank's queue grows as its connections join: 32 slots on 4 QPs make
// 304 entries per connection end, 12 ends per rank need 3648, more than
// the first queue's 1024; every completion still reaches its connection.
TEST(IbloopSharedCq, GrowsAsConnectionsJoin) {
  applySetup(kSetups[0]);
  setenv("WEFT_NCHANNELS", "2", 1);
  setenv("WEFT_NSLOTS", "32", 1);
  setenv("WEFT_IB_QPS_PER_CONNECTION", "4", 1);
  const int n = 4;
  const long logStart = logFileEnd();
  {
    ThreadRanks ranks(n);
    ASSERT_EQ(ranks.status(), weftSuccess) << weftGetLastError(nullptr);
    for (CollKind coll : {CollKind::AllToAll, CollKind::AllReduce}) {
      Scenario s;
      s.coll = coll;
      s.count = 20011;
      s.seed = 11;
      Inputs in = makeInputs(s, n);
      std::string err = ranks.run([&](int r) { return runAndCheck(ranks.comm(r), r, n, s, &in); });
      ASSERT_EQ(err, "") << s.describe();
    }
    EXPECT_EQ(liveCqs(), n);
  }
  for (const char* v : {"WEFT_NCHANNELS", "WEFT_NSLOTS", "WEFT_IB_QPS_PER_CONNECTION"}) unsetenv(v);
  const std::string log = logTextSince(logStart);
  EXPECT_NE(log.find("grown from 1024 to 2048 entries"), std::string::npos) << log;
  EXPECT_NE(log.find("grown from 2048 to 4096 entries"), std::string::npos) << log;
  EXPECT_EQ(liveCqs(), 0);
}

int runScenarios(int rank, int n, const weftUniqueId& id) {
  weftComm_t comm = nullptr;
  weftResult_t rc = weftCommInitRank(&comm, n, id, rank);
  if (rc != weftSuccess) {
    fprintf(stderr, "rank %d: weftCommInitRank: %s (%s)\n", rank, weftGetErrorString(rc), weftGetLastError(nullptr));
    return 2;
  }
  int failed = 0;
  for (const Scenario& s : scenarios(n, 500 + n)) {
    std::string err = runAndCheck(comm, rank, n, s);
    if (!err.empty()) {
      fprintf(stderr, "rank %d/%d: %s\n", rank, n, err.c_str());
      if (err.find("returned") != std::string::npos) return 3;
      failed++;
    }
  }
  weftResult_t async = weftSuccess;
  weftCommGetAsyncError(comm, &async);
  if (async != weftSuccess) fprintf(stderr, "rank %d: async error %s\n", rank, weftGetErrorString(async));
  if (weftCommDestroy(comm) != weftSuccess) return 4;
  return failed ? 1 : async != weftSuccess ? 5 : 0;
}

class IbloopProcesses : public ::testing::TestWithParam<Case> {};

TEST_P(IbloopProcesses, EveryCollectiveChecked) {
  const Case c = GetParam();
  applySetup(kSetups[c.setup]);  // inherited by the children
  ProcessRunOptions opt;
  opt.deadlineMs = 120000;
  const long logStart = logFileEnd();
  const int n = c.nranks;
  ProcessRunResult r = runRankProcesses(n, [n](int rank, const weftUniqueId& id) { return runScenarios(rank, n, id); }, opt);
  EXPECT_EQ(r.failures(), "");
  std::printf("%d process ranks (%s): %ld ms\n", n, kSetups[c.setup].name, static_cast<long>(r.elapsedMs));
  const std::string log = logTextSince(logStart);
  EXPECT_NE(log.find("via NET/IB/lbv"), std::string::npos) << log;
  EXPECT_EQ(log.find("via NET/Socket"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Ibloop, IbloopProcesses, ::testing::Values(Case{2, 0}, Case{4, 1}, Case{3, 3}, Case{3, 2}),
                         caseName);

}  // namespace
}  // namespace weft::test
