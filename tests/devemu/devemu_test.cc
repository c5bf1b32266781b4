// The device interpreter's source, compiled for the host and run by CPU
// threads (tests/devemu/emulator.h), on plans from the real builders.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "algorithms/collectives.h"
#include "algorithms/registry.h"
#include "src/exec/cuda/device_compute.cuh"
#include "tests/devemu/harness.h"

namespace weft::devemu {
namespace {

using plan::Coll;

// Runs the call on every rank and checks statuses, outputs and FIFOs.
void expectCorrect(const CallSpec& s) {
  SCOPED_TRACE(describe(s));
  Call call(s);
  if (call.skipped()) return;
  call.runAll();
  for (int r = 0; r < s.nranks; r++) {
    const cuda::DevStatus st = call.status(r);
    ASSERT_EQ(st.code, 0u) << "rank " << r << " stopped in channel " << st.channel << " step " << st.step;
  }
  EXPECT_EQ(call.check(), "");
  EXPECT_EQ(call.fifos().postedSinceStart(), call.piecesExpected());
  EXPECT_TRUE(call.fifos().allConsumed());
  // Exact arithmetic: the host executor's bytes, bit for bit.
  if (s.arith == cuda::kArithExact) EXPECT_EQ(call.compareWithHostExecutor(), "");
}

bool rooted(Coll c) { return plan::collInfo(c).rooted; }

const Coll kColls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce,
                       Coll::AllToAll};

// Every collective x every registered algorithm that implements it, in
// place and out of place, on a FIFO small enough that each step takes
// several pieces and the FIFOs fill.
TEST(DevEmu, EveryCollectiveAndAlgorithm) {
  int ran = 0;
  std::set<std::string> skipped;  // plans with steps only host buffers run
  for (Coll c : kColls) {
    const bool fixed = plan::collInfo(c).fixedPlan;
    for (int a = 0; a < (fixed ? 1 : algo::algoCount()); a++) {
      if (!fixed && !algo::algoSupports(static_cast<algo::AlgoId>(a), c)) continue;
      for (bool inPlace : {false, true}) {
        if (c == Coll::AllToAll && inPlace) continue;  // launch stages the send buffer first
        CallSpec s;
        s.coll = c;
        s.algo = a;
        s.nranks = 4;
        s.count = 37;
        s.root = rooted(c) ? 2 : 0;
        s.opKind = cuda::kOpSum;
        s.inPlace = inPlace;
        s.seed = ran + 1;
        Call probe(s);
        if (probe.skipped()) {
          skipped.insert(std::string(plan::collName(c)) + "/" + algo::algoName(static_cast<algo::AlgoId>(a)) + " (" +
                         probe.skipWhy().substr(0, 60) + ")");
          continue;
        }
        expectCorrect(s);
        ran++;
      }
    }
  }
  std::printf("ran %d calls; not device plans: %zu\n", ran, skipped.size());
  for (const auto& k : skipped) std::printf("  %s\n", k.c_str());
  EXPECT_GT(ran, 20);
}

// Every type x op on ring AllReduce and ReduceScatter (3 ranks: uneven
// chunks), with the buffers misaligned by one element.
TEST(DevEmu, TypesAndOps) {
  const weftDataType_t types[] = {weftFloat32, weftFloat16, weftBfloat16, weftInt32, weftFloat64, weftUint8, weftInt64};
  int seed = 100;
  for (weftDataType_t t : types)
    for (int op = cuda::kOpSum; op <= cuda::kOpPreMulSum; op++)
      for (Coll c : {Coll::AllReduce, Coll::ReduceScatter}) {
        CallSpec s;
        s.coll = c;
        s.algo = 0;  // ring
        s.nranks = 3;
        s.count = 45;
        s.type = t;
        s.opKind = op;
        s.misalign = (op % 2) ? 1 : 0;
        s.inPlace = op >= cuda::kOpAvg;
        s.seed = seed++;
        expectCorrect(s);
      }
}

// 16-byte vectors and their tails: aligned and misaligned starts, counts
// around the unrolled blocks (threads x kCopyUnroll / kReduceUnroll vectors).
TEST(DevEmu, AlignmentAndTails) {
  for (weftDataType_t t : {weftFloat32, weftFloat16})
    for (uint64_t mis : {0, 1, 2, 3, 8})
      for (uint64_t count : {1, 7, 8, 95, 96, 97, 400}) {
        CallSpec s;
        s.type = t;
        s.nranks = 2;
        s.count = count;
        s.misalign = mis;
        s.geometry = {1024, 4};
        s.seed = count * 10 + mis;
        expectCorrect(s);
      }
}

// Device plans split on 16-byte multiples: with 16-byte-aligned buffers
// every piece of every collective x algorithm runs as vectors (counts that
// do not divide by the ranks, channels or vectors), and the results are the
// host executor's. Planned as host plans (element splits), some pieces of
// the same calls would run element by element.
TEST(DevEmu, AlignedSplitsKeepPiecesVectorised) {
  int ran = 0;
  uint64_t hostSplitScalar = 0;
  for (Coll c : kColls) {
    const bool fixed = plan::collInfo(c).fixedPlan;
    for (int a = 0; a < (fixed ? 1 : algo::algoCount()); a++) {
      if (!fixed && !algo::algoSupports(static_cast<algo::AlgoId>(a), c)) continue;
      for (weftDataType_t t : {weftFloat32, weftFloat16, weftUint8}) {
        CallSpec s;
        s.coll = c;
        s.algo = a;
        s.nranks = 3;
        s.nChannels = 3;
        // A per-rank block of whole vectors: ReduceScatter/AllGather/AllToAll
        // place rank blocks at rank * count.
        const bool perRank = c == Coll::ReduceScatter || c == Coll::AllGather || c == Coll::AllToAll;
        s.count = perRank ? 16 * 7 : 1009;
        s.type = t;
        s.root = rooted(c) ? 1 : 0;
        s.geometry = {256, 4};
        s.seed = ran + 7;
        Call call(s);
        if (call.skipped()) continue;
        SCOPED_TRACE(describe(s));
        EXPECT_EQ(call.scalarPieces(), 0u);
        expectCorrect(s);
        s.alignBytes = 0;
        hostSplitScalar += Call(s).scalarPieces();
        ran++;
      }
    }
  }
  EXPECT_GT(ran, 20);
  EXPECT_GT(hostSplitScalar, 0u);
}

// Pieces: a slice smaller than the slot, a slot that is not a multiple of
// the element count, several slot counts; the number of posts is checked
// against the plans in expectCorrect.
TEST(DevEmu, PieceSizesAndSlots) {
  for (uint32_t nSlots : {2u, 3u, 8u})
    for (uint64_t slice : {0, 16, 48}) {
      CallSpec s;
      s.nranks = 3;
      s.count = 200;
      s.geometry = {64, nSlots};
      s.sliceBytes = slice;
      s.type = weftFloat64;
      s.seed = nSlots * 100 + slice;
      expectCorrect(s);
    }
}

// Counters that wrap during the call (posted/consumed start just below
// 2^32); slot counts that divide 2^32, as the slot index is counter % nSlots.
TEST(DevEmu, CounterWrap) {
  for (uint32_t nSlots : {2u, 4u, 8u})
    for (Coll c : {Coll::AllReduce, Coll::AllGather, Coll::AllToAll}) {
      CallSpec s;
      s.coll = c;
      s.nranks = 3;
      s.count = 150;
      s.geometry = {64, nSlots};
      s.counterStart = 0xFFFFFFFFu - 5;
      s.seed = nSlots;
      expectCorrect(s);
    }
}

// Credits: the producer learns freed slots from a word in its own memory
// that the consumer writes (DevFifo::credit, as p2p FIFOs have), never from
// `consumed` at the consumer (the harness hands the producer a decoy
// `consumed` that never moves: reading it would stall to the timeout).
// Many more pieces than slots, counters wrapping, simple and LL; and the
// same calls on FIFOs without credit words (host memory), where the
// producer reads `consumed`.
TEST(DevEmu, ProducerWaitsOnItsOwnCreditWord) {
  for (bool credits : {true, false})
    for (uint32_t proto : {cuda::kProtoSimple, cuda::kProtoLl})
      for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllToAll}) {
        if (proto == cuda::kProtoLl && c == Coll::AllToAll) continue;  // AllToAll stays on simple
        CallSpec s;
        s.coll = c;
        s.nranks = 3;
        s.count = 600;
        s.geometry = {64, 2};
        s.counterStart = 0xFFFFFFFFu - 9;
        s.proto = proto;
        s.credits = credits;
        s.timeoutMs = 3000;
        s.seed = 7 + proto;
        expectCorrect(s);
      }
}

// More channels than CTAs: each CTA serves several channels and takes
// whichever is ready. AllToAll has 2n-1 channels, every one a single
// send or receive, which deadlocks if a CTA ran its channels in order.
TEST(DevEmu, ChannelsShareCtas) {
  for (int ctas : {1, 2, 5}) {
    CallSpec s;
    s.coll = Coll::AllToAll;
    s.nranks = 9;
    s.count = 40;
    s.shape.maxCtas = ctas + 1;  // 17 channels on 2, 3 or 6 CTAs
    s.shape.threadsPerCta = 2;
    s.seed = ctas;
    expectCorrect(s);
    s.coll = Coll::AllReduce;
    s.nChannels = 4;
    s.nranks = 3;
    s.shape.maxCtas = ctas;
    expectCorrect(s);
  }
}

// AllToAll over 65 ranks: 129 channels, more than one CTA per channel can
// give (kMaxDeviceCtas); one thread per CTA keeps the thread count down.
TEST(DevEmu, AllToAllBeyondSixtyFourRanks) {
  CallSpec s;
  s.coll = Coll::AllToAll;
  s.nranks = 65;
  s.count = 3;
  s.shape.maxCtas = 9;
  s.shape.threadsPerCta = 1;
  expectCorrect(s);
}

// Native half2/bfloat162 mode: on the host it computes what exact mode
// does (the instructions exist only on the GPU), so results stay right.
TEST(DevEmu, NativeArithModeRuns) {
  for (weftDataType_t t : {weftFloat16, weftBfloat16}) {
    CallSpec s;
    s.type = t;
    s.arith = cuda::kArithNative;
    s.nranks = 4;
    s.count = 300;
    s.geometry = {256, 4};
    expectCorrect(s);
  }
}

CallSpec twoRanks() {
  CallSpec s;
  s.nranks = 2;
  s.count = 500;
  s.nChannels = 1;
  return s;
}

// A peer that never comes: the wait ends at the timeout with weftTimeout,
// naming the channel and step.
TEST(DevEmu, TimeoutWhenPeerNeverRuns) {
  CallSpec s = twoRanks();
  s.timeoutMs = 30;
  Call call(s);
  const auto t0 = std::chrono::steady_clock::now();
  call.run({0});
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  const cuda::DevStatus st = call.status(0);
  EXPECT_EQ(st.code, uint32_t(weftTimeout));
  EXPECT_EQ(st.channel, 0);
  EXPECT_GE(st.step, 0);
  EXPECT_LT(ms.count(), 5000);
}

// The communicator's abort flag ends a wait with no timeout set.
TEST(DevEmu, AbortFlagEndsWait) {
  CallSpec s = twoRanks();
  s.timeoutMs = 0;
  Call call(s);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    call.abortFlag(0).store(1);
  });
  call.run({0});
  aborter.join();
  EXPECT_EQ(call.status(0).code, uint32_t(weftRemoteError));
}

// A failed connection (the FIFO's failed word) ends the wait.
TEST(DevEmu, FailedFifoEndsWait) {
  CallSpec s = twoRanks();
  s.timeoutMs = 0;
  Call call(s);
  call.fifos().get(1, 0, 0)->failed.store(1);
  call.fifos().get(0, 1, 0)->failed.store(1);
  call.run({0});
  EXPECT_EQ(call.status(0).code, uint32_t(weftRemoteError));
}

// Ranks that disagree on the call (different counts): a piece of the wrong
// size is reported as weftInternalError with the received byte count.
TEST(DevEmu, MismatchedPieceSizeIsReported) {
  CallSpec a = twoRanks();
  a.alignBytes = 0;  // element splits: blocks of count / 2
  a.count = 10;  // pieces of 5 elements (20 bytes)
  CallSpec b = a;
  b.count = 12;  // pieces of 6 (24 bytes)
  Call ca(a), cb(b);
  // Rank 1 runs the second call over the first call's FIFOs (same plan
  // shape, so the same FIFO table).
  cb.launch(1).fifos = ca.launch(1).fifos;
  std::thread t1([&] { cb.run({1}); });
  ca.run({0});
  cb.abortFlag(1).store(1);  // in case rank 1 still waits for rank 0
  t1.join();
  const cuda::DevStatus st = ca.status(0);
  EXPECT_EQ(st.code, uint32_t(weftInternalError));
  EXPECT_EQ(st.detail, 24);
  EXPECT_NE(cb.status(1).code, 0u);  // the same mismatch seen from its side, or the abort
}

}  // namespace
}  // namespace weft::devemu
