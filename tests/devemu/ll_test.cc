// The device LL protocol (DevProto::kProtoLl, src/exec/cuda/device_ll.cuh)
// through the host-compiled interpreter: every collective x algorithm x a
// few types against a float64 reference and the host executor's bytes,
// flags that wrap with the counters, many calls on the same FIFOs, and
// waits that end mid-piece.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "algorithms/registry.h"
#include "src/exec/cuda/device_compute.cuh"
#include "tests/devemu/harness.h"

namespace weft::devemu {
namespace {

using plan::Coll;

const Coll kColls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce,
                       Coll::AllToAll};

void expectStatusesOk(const Call& call, int nranks) {
  for (int r = 0; r < nranks; r++) {
    const cuda::DevStatus st = call.status(r);
    ASSERT_EQ(st.code, 0u) << "rank " << r << " stopped in channel " << st.channel << " step " << st.step;
  }
}

void expectCorrectLl(const CallSpec& s) {
  SCOPED_TRACE(describe(s));
  Call call(s);
  if (call.skipped()) return;
  call.runAll();
  expectStatusesOk(call, s.nranks);
  EXPECT_EQ(call.check(), "");
  EXPECT_EQ(call.fifos().postedSinceStart(), call.piecesExpected());
  EXPECT_TRUE(call.fifos().allConsumed());
  EXPECT_EQ(call.compareWithHostExecutor(), "");
}

CallSpec llSpec() {
  CallSpec s;
  s.proto = cuda::kProtoLl;
  s.nranks = 4;
  s.geometry = {128, 4};  // 64 data bytes per LL piece: several pieces per step
  return s;
}

// Every collective x algorithm x type (1, 2, 4 and 8 bytes), in and out of
// place, counts with partial lines and partial groups.
TEST(DevEmuLl, EveryCollectiveAlgorithmAndType) {
  int ran = 0;
  for (Coll c : kColls) {
    const bool fixed = plan::collInfo(c).fixedPlan;
    for (int a = 0; a < (fixed ? 1 : algo::algoCount()); a++) {
      if (!fixed && !algo::algoSupports(static_cast<algo::AlgoId>(a), c)) continue;
      for (weftDataType_t t : {weftFloat32, weftFloat16, weftUint8, weftFloat64, weftBfloat16})
        for (bool inPlace : {false, true}) {
          if (c == Coll::AllToAll && inPlace) continue;  // launch stages the send buffer first
          CallSpec s = llSpec();
          s.coll = c;
          s.algo = a;
          s.type = t;
          s.count = t == weftUint8 ? 43 : 37;
          s.root = plan::collInfo(c).rooted ? 2 : 0;
          s.opKind = inPlace ? cuda::kOpMax : cuda::kOpSum;
          s.inPlace = inPlace;
          s.seed = ran + 11;
          if (Call(s).skipped()) continue;
          expectCorrectLl(s);
          ran++;
        }
    }
  }
  std::printf("ran %d LL calls\n", ran);
  EXPECT_GT(ran, 60);
}

// Every op, misaligned buffers, several channels and CTAs sharing them.
TEST(DevEmuLl, OpsChannelsAndMisalignment) {
  int seed = 300;
  for (int op = cuda::kOpSum; op <= cuda::kOpPreMulSum; op++)
    for (Coll c : {Coll::AllReduce, Coll::ReduceScatter}) {
      CallSpec s = llSpec();
      s.coll = c;
      s.nranks = 3;
      s.count = 301;
      s.nChannels = 3;
      s.shape.maxCtas = 2;
      s.type = op % 2 ? weftBfloat16 : weftFloat32;
      s.opKind = op;
      s.misalign = op % 3;
      s.seed = seed++;
      expectCorrectLl(s);
    }
}

// Flags are the FIFO counter + 1: they wrap with the counters (one call
// crossing 2^32, where the flag of a piece is 0), for every slot count.
TEST(DevEmuLl, FlagsWrapWithCounters) {
  for (uint32_t nSlots : {2u, 4u, 8u})
    for (Coll c : {Coll::AllReduce, Coll::AllGather, Coll::AllToAll}) {
      CallSpec s = llSpec();
      s.coll = c;
      s.nranks = 3;
      s.count = 150;
      s.geometry = {64, nSlots};
      s.counterStart = 0xFFFFFFFFu - 5;
      s.seed = nSlots;
      expectCorrectLl(s);
    }
}

// Many calls on the same FIFOs: each call's flags continue from the last
// call's counters, lines still hold the previous call's data and flags, and
// the counters cross 2^32 part way through. Fresh inputs and poisoned
// outputs each time, so a call that read stale lines would fail.
TEST(DevEmuLl, ManyCallsOnTheSameFifosAcrossTheWrap) {
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllToAll}) {
    CallSpec s = llSpec();
    s.coll = c;
    s.nranks = 3;
    s.count = 40;
    s.geometry = {64, 4};
    // 16 pieces below 2^32: every FIFO carries at least one piece per call,
    // so each crosses 2^32 within the 25 calls.
    s.counterStart = 0u - 16u;
    Call wrapped(s);
    const uint64_t perCall = wrapped.piecesExpected();
    ASSERT_GT(perCall, 0u);
    for (int i = 0; i < 25; i++) {
      SCOPED_TRACE(describe(s) + " call " + std::to_string(i));
      wrapped.refresh(1000 + uint64_t(i));
      wrapped.runAll();
      expectStatusesOk(wrapped, s.nranks);
      ASSERT_EQ(wrapped.check(), "");
    }
    EXPECT_EQ(wrapped.fifos().postedSinceStart(), 25 * perCall);
    EXPECT_TRUE(wrapped.fifos().allConsumed());
  }
}

CallSpec twoRanksLl() {
  CallSpec s = llSpec();
  s.nranks = 2;
  s.count = 500;
  s.nChannels = 1;
  s.geometry = {64, 4};  // 32 data bytes: 8 lines per piece
  return s;
}

// Rank 0's first received piece has its first line only (what a sender
// that died mid-piece leaves): the threads waiting on the other lines end
// at the timeout, reported with the channel and step, and nothing is posted
// for that piece.
TEST(DevEmuLl, WaitMidPieceEndsAtTimeout) {
  CallSpec s = twoRanksLl();
  s.timeoutMs = 30;
  Call call(s);
  FifoHeader* in = call.fifos().get(1, 0, 0);
  auto* line0 = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(in) + in->dataOffset);
  *line0 = uint64_t(1) << 32;  // flag of counter 0, data 0
  const auto t0 = std::chrono::steady_clock::now();
  call.run({0});
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  const cuda::DevStatus st = call.status(0);
  EXPECT_EQ(st.code, uint32_t(weftTimeout));
  EXPECT_EQ(st.channel, 0);
  EXPECT_GE(st.step, 1);  // the receive, after the first send
  EXPECT_EQ(in->consumed.load(), 0u);
  EXPECT_LT(ms.count(), 5000);
}

// The same wait with no timeout ends on the abort flag.
TEST(DevEmuLl, WaitMidPieceEndsOnAbort) {
  CallSpec s = twoRanksLl();
  s.timeoutMs = 0;
  Call call(s);
  FifoHeader* in = call.fifos().get(1, 0, 0);
  *reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(in) + in->dataOffset) = uint64_t(1) << 32;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    call.abortFlag(0).store(1);
  });
  call.run({0});
  aborter.join();
  EXPECT_EQ(call.status(0).code, uint32_t(weftRemoteError));
}

// A peer that never comes: thread 0's first-line poll ends at the timeout.
TEST(DevEmuLl, TimeoutWhenPeerNeverRuns) {
  CallSpec s = twoRanksLl();
  s.timeoutMs = 30;
  Call call(s);
  call.run({0});
  EXPECT_EQ(call.status(0).code, uint32_t(weftTimeout));
}

}  // namespace
}  // namespace weft::devemu
