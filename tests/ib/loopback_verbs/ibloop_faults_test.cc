// Faults injected by the loopback verbs provider under weft's IB transport,
// ranks as processes: each must end in a clear error within a bound (never
// a hang, never a wrong result), or, where the fault leaves another way,
// in correct results over it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ibloop_env.h"
#include "tests/process/process_ranks.h"

namespace weft::test {
namespace {

IbloopProcessEnv ibloopEnv;

constexpr int kOk = 0, kInitFailed = 2, kCallFailed = 10, kWrongResult = 11, kVanished = 43;
constexpr size_t kCount = 20011;  // many 8 KiB slots per call
// Calls per run; set by a test before the ranks fork (they inherit it).
int gIters = 60;
// Set by a test: after the first call, fork a child that exits at once
// (as a data-loader worker or a subprocess would).
bool gForkAfterFirstCall = false;

// AllReduce kIters times, every result checked.
int allReduceLoop(int rank, int n, const weftUniqueId& id) {
  weftComm_t comm = nullptr;
  weftResult_t rc = weftCommInitRank(&comm, n, id, rank);
  if (rc != weftSuccess) {
    fprintf(stderr, "rank %d: init: %s: %s\n", rank, weftGetErrorString(rc), weftGetLastError(nullptr));
    return kInitFailed;
  }
  std::vector<float> send(kCount), recv(kCount);
  int code = kOk;
  for (int it = 0; it < gIters && code == kOk; ++it) {
    for (size_t i = 0; i < kCount; ++i) send[i] = float((i * 7 + size_t(it) * 13 + size_t(rank)) % 1024);
    rc = weftAllReduce(send.data(), recv.data(), kCount, weftFloat32, weftSum, comm, nullptr);
    if (rc != weftSuccess) {
      fprintf(stderr, "rank %d: AllReduce %d: %s: %s\n", rank, it, weftGetErrorString(rc), weftGetLastError(comm));
      code = kCallFailed;
      break;
    }
    for (size_t i = 0; i < kCount; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += float((i * 7 + size_t(it) * 13 + size_t(r)) % 1024);
      if (recv[i] != want) {
        fprintf(stderr, "rank %d: AllReduce %d: element %zu is %g, expected %g\n", rank, it, i, recv[i], want);
        code = kWrongResult;
        break;
      }
    }
    if (it == 0 && gForkAfterFirstCall) {
      pid_t child = fork();
      if (child == 0) _exit(0);
      if (child > 0) waitpid(child, nullptr, 0);
    }
  }
  if (code == kCallFailed) weftCommAbort(comm);
  else weftCommDestroy(comm);
  return code;
}

struct FaultRun {
  ProcessRunResult result;
  std::string log;
};

// n ranks; rankEnv(rank) adds variables for that rank.
FaultRun runWith(int n, const std::function<std::map<std::string, std::string>(int)>& rankEnv, int iters = 60,
                 bool forkAfterFirstCall = false) {
  gIters = iters;
  gForkAfterFirstCall = forkAfterFirstCall;
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;  // far past every bound below: reaching it is a hang
  opt.env = [&rankEnv](int rank) {
    ChildEnv e;
    e.vars["WEFT_BUFFSIZE"] = "65536";
    e.vars["WEFT_TIMEOUT_MS"] = "8000";
    e.vars["LOOPBACK_VERBS_DEVICES"] = "lbv0:1:IB";
    e.vars["LOOPBACK_VERBS_FAULTS"] = "";
    e.vars["WEFT_IB_QPS_PER_CONNECTION"] = "2";
    for (auto& [k, v] : rankEnv(rank)) e.vars[k] = v;
    return e;
  };
  const long logStart = logFileEnd();
  FaultRun out;
  out.result = runRankProcesses(n, [n](int rank, const weftUniqueId& id) { return allReduceLoop(rank, n, id); }, opt);
  out.log = logTextSince(logStart);
  return out;
}

// Every rank ended (no hang), none saw a wrong result, each with a code in
// `allowed`, within `boundMs`.
void expectBoundedErrors(const FaultRun& f, const std::vector<std::vector<int>>& allowed, int64_t boundMs) {
  const ProcessRunResult& r = f.result;
  EXPECT_FALSE(r.timedOut) << r.failures();
  EXPECT_LT(r.elapsedMs, boundMs);
  for (size_t rank = 0; rank < r.children.size(); ++rank) {
    const ChildOutcome& c = r.children[rank];
    ASSERT_FALSE(c.signaled) << "rank " << rank << " signal " << c.signal;
    EXPECT_NE(c.exitCode, kWrongResult) << "rank " << rank;
    bool ok = false;
    for (int a : allowed[rank]) ok = ok || c.exitCode == a;
    EXPECT_TRUE(ok) << "rank " << rank << " exit code " << c.exitCode;
  }
}

std::map<std::string, std::string> on(int rank, int faulty, const std::string& faults) {
  if (rank != faulty) return {};
  return {{"LOOPBACK_VERBS_FAULTS", faults}};
}

TEST(IbloopFaults, ErrorCompletionWithChosenStatus) {
  FaultRun f = runWith(2, [](int r) { return on(r, 1, "wc_status=retry,wc_after=40"); });
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("work completion error on lbv0:1"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("transport retry counter exceeded (status 12"), std::string::npos) << f.log;
}

TEST(IbloopFaults, RemoteAccessErrorStatus) {
  FaultRun f = runWith(2, [](int r) { return on(r, 0, "wc_status=access,wc_after=25"); });
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("remote access error (status 10"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("the peer's registered memory is gone"), std::string::npos) << f.log;
}

TEST(IbloopFaults, QpMovedToError) {
  FaultRun f = runWith(2, [](int r) { return on(r, 1, "qp_error_after=30"); });
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}}, 20000);
  // The async event names the QP at once; its flushed requests may or may
  // not be polled before the rank gives up (whichever comes first wins).
  const bool event = f.log.find("NET/IB: lbv0 reports local work queue catastrophic error (1) on QP") != std::string::npos;
  const bool flushed = f.log.find("Work Request Flushed Error (status 5") != std::string::npos;
  EXPECT_TRUE(event || flushed) << f.log;
}

// A completion queue that overruns (here: one far smaller than weft asked
// for) is a CQ error event and a failing poll; the connection fails at
// once, saying so (whichever of the two it sees first).
TEST(IbloopFaults, CompletionQueueOverrun) {
  FaultRun f = runWith(2, [](int r) { return on(r, 1, "cq_cap=2,delay_us=2000"); });
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("completion queue overr"), std::string::npos) << f.log;
}

TEST(IbloopFaults, PortGoesDown) {
  // Enough calls to outlast the fault by far: finishing them all fails the bound.
  // On both ranks (one port, as on one switch): each rank's first error
  // is its own retry error, which names the port event seen before it.
  FaultRun f = runWith(2, [](int) { return on(0, 0, "port_down_after_ms=200"); }, 100000);
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("NET/IB: lbv0:1 reports port error (10)"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("transport retry counter exceeded (status 12"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("; lbv0:1 reported port error"), std::string::npos) << f.log;
}

TEST(IbloopFaults, PeerVanishes) {
  FaultRun f = runWith(3, [](int r) { return on(r, 2, "exit_after=50"); });
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}, {kVanished}}, 25000);
}

// Slow and shuffled completions are no error: the results stay right.
TEST(IbloopFaults, DelayedReorderedCompletionsStayCorrect) {
  FaultRun f = runWith(3, [](int r) {
    return std::map<std::string, std::string>{{"LOOPBACK_VERBS_FAULTS", "delay_us=500,reorder=1,seed=" + std::to_string(r)},
                                              {"WEFT_IB_QPS_PER_CONNECTION", "4"}};
  });
  EXPECT_EQ(f.result.failures(), "");
}

// A port that is down from the start: IB is not usable, and the ranks fall
// back to sockets (or, when WEFT_NET forces IB, fail init saying why).
TEST(IbloopFaults, PortDownAtStartFallsBackToSockets) {
  FaultRun f = runWith(2, [](int) {
    return std::map<std::string, std::string>{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:IB-down"}, {"WEFT_NET", ""}};
  });
  EXPECT_EQ(f.result.failures(), "");
  EXPECT_NE(f.log.find("via NET/Socket"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("port down (lbv0:1 DOWN"), std::string::npos) << f.log;
}

TEST(IbloopFaults, PortDownAtStartWithIbForcedFailsInit) {
  FaultRun f = runWith(2, [](int) { return std::map<std::string, std::string>{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:IB-down"}}; });
  expectBoundedErrors(f, {{kInitFailed}, {kInitFailed}}, 20000);
}

// One rank on an IB port, the other on RoCE: they cannot reach each other
// over verbs, so the pair uses sockets (agreed at init from both ranks'
// facts) rather than failing at connect.
TEST(IbloopFaults, MixedLinkLayersFallBackToSockets) {
  FaultRun f = runWith(2, [](int r) {
    return std::map<std::string, std::string>{{"LOOPBACK_VERBS_DEVICES", r == 0 ? "lbv0:1:IB" : "lbv0:1:RoCE"},
                                              {"WEFT_NET", ""}};
  });
  EXPECT_EQ(f.result.failures(), "");
  EXPECT_NE(f.log.find("via NET/Socket"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("IB link layers differ (IB here, RoCE on rank 1)"), std::string::npos) << f.log;
}

// A fork() after init: weft turned fork support on before registering
// anything, so the parent's registered pages stay its own and the calls go
// on correctly.
TEST(IbloopFaults, ForkAfterInitKeepsTransfersCorrect) {
  FaultRun f = runWith(2, [](int) { return std::map<std::string, std::string>{}; }, 20, true);
  EXPECT_EQ(f.result.failures(), "");
  EXPECT_NE(f.log.find("fork support enabled (ibv_fork_init)"), std::string::npos) << f.log;
}

// Where the kernel copies pinned pages at fork, nothing needs doing.
TEST(IbloopFaults, ForkSupportSkippedWhereUnneeded) {
  FaultRun f = runWith(2, [](int) { return std::map<std::string, std::string>{{"LOOPBACK_VERBS_FAULTS", "fork=unneeded"}}; },
                       20, true);
  EXPECT_EQ(f.result.failures(), "");
  EXPECT_NE(f.log.find("fork support not needed"), std::string::npos) << f.log;
}

// What the protection prevents, shown with it turned off: the provider
// models the stale pages, the calls stall and end in a clear timeout error.
TEST(IbloopFaults, ForkWithoutSupportIsCaughtNotSilent) {
  FaultRun f = runWith(2, [](int) {
    return std::map<std::string, std::string>{{"RDMAV_FORK_SAFE", "0"}, {"WEFT_TIMEOUT_MS", "3000"}};
  }, 20, true);
  expectBoundedErrors(f, {{kCallFailed}, {kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("fork support off (RDMAV_FORK_SAFE=0)"), std::string::npos) << f.log;
}

// RoCE ends that picked GIDs of different address families (an IPv4-mapped
// one here, a link-local IPv6 one there) cannot reach each other: a clear
// error when they connect, not status 12 after the whole retry time.
TEST(IbloopFaults, RoceGidFamiliesDifferIsAClearErrorAtConnect) {
  FaultRun f = runWith(2, [](int r) {
    return std::map<std::string, std::string>{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:RoCE"},
                                              {"WEFT_IB_GID_INDEX", r == 0 ? "1" : "0"}};
  });
  expectBoundedErrors(f, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("RoCE GIDs cannot reach each other: address families differ"), std::string::npos) << f.log;
  EXPECT_EQ(f.log.find("status 12"), std::string::npos) << f.log;
}

// ---- addressing settings: what weft sets on the QPs, checked by the provider ----

using Env = std::map<std::string, std::string>;

// The settings reach the QPs: the provider refuses any other pkey index,
// service level, timeout or retry count, and a GRH on one IB subnet.
TEST(IbloopAddressing, QpAttributesFollowTheSettings) {
  FaultRun f = runWith(2, [](int) {
    return Env{{"WEFT_IB_PKEY", "1"}, {"WEFT_IB_SL", "3"}, {"WEFT_IB_TIMEOUT", "13"}, {"WEFT_IB_RETRY_CNT", "5"},
               {"LOOPBACK_VERBS_EXPECT", "pkey_index=1,sl=3,timeout=13,retry_cnt=5,grh=0"}};
  }, 10);
  EXPECT_EQ(f.result.failures(), "");
}

// The check can fail: a setting that did not reach the QP is refused.
TEST(IbloopAddressing, ProviderRefusesAnAttributeWeftDidNotSet) {
  FaultRun f = runWith(2, [](int) { return Env{{"LOOPBACK_VERBS_EXPECT", "pkey_index=1"}}; }, 10);
  expectBoundedErrors(f, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("QP to INIT"), std::string::npos) << f.log;
}

// A P_Key index past the port's table: named, before any QP is made.
TEST(IbloopAddressing, PkeyIndexBeyondTheTableIsNamed) {
  FaultRun f = runWith(2, [](int) { return Env{{"WEFT_IB_PKEY", "5"}}; }, 5);
  expectBoundedErrors(f, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("WEFT_IB_PKEY=5, but lbv0:1"), std::string::npos) << f.log;
  EXPECT_NE(f.log.find("has 2 partition keys (indices 0..1)"), std::string::npos) << f.log;
}

// The hosts' partition tables disagree at the chosen index: a clear error
// at connect naming both keys, not retries that run out in the first call.
TEST(IbloopAddressing, PartitionKeysThatDifferAreNamedAtConnect) {
  FaultRun f = runWith(2, [](int r) {
    return Env{{"WEFT_IB_PKEY", "1"}, {"LOOPBACK_VERBS_PKEYS", r == 0 ? "ffff,8001" : "ffff,8002"}};
  }, 5);
  expectBoundedErrors(f, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("partition keys differ (0x8001 here, 0x8002 on the peer)"), std::string::npos) << f.log;
  EXPECT_EQ(f.log.find("status 12"), std::string::npos) << f.log;
}

// Both ends limited members of one partition cannot talk either; one full
// member with one limited member can.
TEST(IbloopAddressing, LimitedMembersNeedOneFullMember) {
  FaultRun limited = runWith(2, [](int) { return Env{{"WEFT_IB_PKEY", "1"}, {"LOOPBACK_VERBS_PKEYS", "ffff,0001"}}; }, 5);
  expectBoundedErrors(limited, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(limited.log.find("both ends are limited members of partition 0x0001"), std::string::npos) << limited.log;
  FaultRun mixed = runWith(2, [](int r) {
    return Env{{"WEFT_IB_PKEY", "1"}, {"LOOPBACK_VERBS_PKEYS", r == 0 ? "ffff,8001" : "ffff,0001"}};
  }, 5);
  EXPECT_EQ(mixed.result.failures(), "");
}

// RoCE: every packet carries a GRH with the traffic class and hop limit.
TEST(IbloopAddressing, RoceGrhCarriesTrafficClass) {
  FaultRun f = runWith(2, [](int) {
    return Env{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:RoCE"}, {"WEFT_IB_TC", "106"},
               {"LOOPBACK_VERBS_EXPECT", "grh=1,tclass=106,hop_limit=255"}};
  }, 10);
  EXPECT_EQ(f.result.failures(), "");
}

// IB ports on different subnets: the LID alone does not reach the peer,
// weft adds a GRH (the provider drops routed packets without one).
TEST(IbloopAddressing, RoutedIbAddsAGrh) {
  FaultRun f = runWith(2, [](int r) {
    return Env{{"LOOPBACK_VERBS_DEVICES", r == 0 ? "lbv0:1:IB" : "lbv0:1:IB/1"},
               {"LOOPBACK_VERBS_EXPECT", "grh=1,hop_limit=255"}};
  }, 10);
  EXPECT_EQ(f.result.failures(), "");
  EXPECT_NE(f.log.find("routed, with a GRH"), std::string::npos) << f.log;
}

// RoCE v2 on one end, v1 on the other: named at connect, no status 12.
TEST(IbloopAddressing, RoceVersionsDifferIsAClearErrorAtConnect) {
  FaultRun f = runWith(2, [](int r) { return Env{{"LOOPBACK_VERBS_DEVICES", r == 0 ? "lbv0:1:RoCE" : "lbv0:1:RoCEv1"}}; });
  expectBoundedErrors(f, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("RoCE versions differ: RoCE v2 here, IB/RoCE v1 on the peer"), std::string::npos) << f.log;
  EXPECT_EQ(f.log.find("status 12"), std::string::npos) << f.log;
}

// The GID filters: a range picks the device whose address is in it, a
// family picks the IPv6 GID; a version no GID has leaves no usable port.
TEST(IbloopAddressing, AddressRangeAndFamilyChooseTheGid) {
  FaultRun range = runWith(2, [](int) {
    return Env{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:RoCE,lbv1:1:RoCE"}, {"WEFT_IB_ADDR_RANGE", "10.0.1.0/24"}};
  }, 5);
  EXPECT_EQ(range.result.failures(), "");
  EXPECT_NE(range.log.find("usable IB ports: lbv1:1/RoCE"), std::string::npos) << range.log;
  FaultRun family = runWith(2, [](int) {
    return Env{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:RoCE"}, {"WEFT_IB_ADDR_FAMILY", "AF_INET6"}};
  }, 5);
  EXPECT_EQ(family.result.failures(), "");
  EXPECT_NE(family.log.find("RoCE v2 link-local IPv6 (does not route across subnets), index 0"), std::string::npos)
      << family.log;
  FaultRun version = runWith(2, [](int) {
    return Env{{"LOOPBACK_VERBS_DEVICES", "lbv0:1:RoCE"}, {"WEFT_IB_ROCE_VERSION", "1"}};
  }, 5);
  expectBoundedErrors(version, {{kInitFailed}, {kInitFailed}}, 20000);
  EXPECT_NE(version.log.find("no GID of the RoCE port matches WEFT_IB_ROCE_VERSION=1"), std::string::npos)
      << version.log;
}

// A setting that must agree and does not: a clear error at connect.
TEST(IbloopFaults, QpCountsDifferIsAClearErrorAtConnect) {
  FaultRun f = runWith(2, [](int r) {
    return std::map<std::string, std::string>{{"WEFT_IB_QPS_PER_CONNECTION", r == 0 ? "2" : "3"}};
  });
  expectBoundedErrors(f, {{kInitFailed, kCallFailed}, {kInitFailed, kCallFailed}}, 20000);
  EXPECT_NE(f.log.find("WEFT_IB_QPS_PER_CONNECTION differs (2 here, 3 on the peer)"), std::string::npos) << f.log;
}

// Ranks that leave at different times: the one that stays must not get an
// error from the one that left (its last credit write, say, meeting a QP
// already destroyed).
TEST(IbloopFaults, StaggeredDestroyLeavesNoSpuriousError) {
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) {
    ChildEnv e;
    e.vars["WEFT_BUFFSIZE"] = "65536";
    e.vars["LOOPBACK_VERBS_FAULTS"] = "";
    return e;
  };
  ProcessRunResult r = runRankProcesses(2, [](int rank, const weftUniqueId& id) {
    weftComm_t comm = nullptr;
    if (weftCommInitRank(&comm, 2, id, rank) != weftSuccess) return kInitFailed;
    std::vector<float> buf(kCount, 1.0f);
    for (int it = 0; it < 20; ++it)
      if (weftAllReduce(buf.data(), buf.data(), kCount, weftFloat32, weftSum, comm, nullptr) != weftSuccess)
        return kCallFailed;
    if (rank == 1) usleep(2000 * 1000);  // well past the retry time (about 0.5 s)
    weftResult_t async = weftSuccess;
    weftCommGetAsyncError(comm, &async);
    if (async != weftSuccess) fprintf(stderr, "rank %d: async error: %s\n", rank, weftGetLastError(comm));
    weftCommDestroy(comm);
    return async == weftSuccess ? kOk : kCallFailed;
  }, opt);
  EXPECT_EQ(r.failures(), "");
}

// The root of a broadcast is done once its writes landed and may leave at
// once; a receiver that takes the data later returns its credit to a QP
// that no longer exists. That must not become an error on the receiver.
TEST(IbloopFaults, LateReceiverAfterRootLeftGetsNoError) {
  ProcessRunOptions opt;
  opt.deadlineMs = 40000;
  opt.env = [](int) {
    ChildEnv e;
    e.vars["WEFT_BUFFSIZE"] = "65536";
    e.vars["LOOPBACK_VERBS_FAULTS"] = "";
    return e;
  };
  ProcessRunResult r = runRankProcesses(2, [](int rank, const weftUniqueId& id) {
    weftComm_t comm = nullptr;
    if (weftCommInitRank(&comm, 2, id, rank) != weftSuccess) return kInitFailed;
    std::vector<float> buf(64, rank == 0 ? 3.0f : 0.0f);
    // A first call makes the connections.
    if (weftBroadcast(buf.data(), buf.data(), buf.size(), weftFloat32, 0, comm, nullptr) != weftSuccess) return kCallFailed;
    if (rank == 1) usleep(300 * 1000);  // the root leaves meanwhile
    if (weftBroadcast(buf.data(), buf.data(), buf.size(), weftFloat32, 0, comm, nullptr) != weftSuccess) return kCallFailed;
    if (buf[0] != 3.0f) return kWrongResult;
    if (rank == 1) usleep(1500 * 1000);  // past the retry time (about 0.5 s)
    weftResult_t async = weftSuccess;
    weftCommGetAsyncError(comm, &async);
    if (async != weftSuccess) fprintf(stderr, "rank %d: async error: %s\n", rank, weftGetLastError(comm));
    weftCommDestroy(comm);
    return async == weftSuccess ? kOk : kCallFailed;
  }, opt);
  EXPECT_EQ(r.failures(), "");
}

}  // namespace
}  // namespace weft::test
