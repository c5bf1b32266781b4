// The verifier must catch broken plans, each with the right kind of issue.
#include <gtest/gtest.h>

#include "algorithms/ring.h"
#include "tests/algorithms/plan_check.h"

namespace weft::test {
namespace {

using plan::Buf;
using plan::Coll;
using verify::IssueKind;

algo::CollArgs ringArgs(Coll c, int n = 4, uint64_t count = 1000) {
  algo::CollArgs a;
  a.coll = c;
  a.nranks = n;
  a.count = count;
  a.geometry = tinyFifo();
  return a;
}

verify::Problem correct(Coll c = Coll::AllReduce, bool inPlace = false) {
  return problemFor(algo::buildRing, ringArgs(c), inPlace);
}

TEST(Verifier, AcceptsCorrectRing) {
  verify::Result r = verify::verify(correct());
  EXPECT_TRUE(r.ok) << r.text();
  EXPECT_GT(r.piecesMoved, 0u);
}

TEST(Verifier, DroppedStep) {
  verify::Problem p = correct();
  auto& steps = p.plans[1].channels[0].steps;
  steps.erase(steps.begin() + 2);  // a recvReduceSend in the middle of the reduce-scatter
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(IssueKind::NoSender)) << r.text();
}

TEST(Verifier, SwappedPeer) {
  verify::Problem p = correct();
  // Rank 2 sends its first chunk to rank 0 instead of rank 3.
  p.plans[2].channels[0].steps[0].sendPeer[0] = 0;
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(IssueKind::NoSender)) << r.text();
}

TEST(Verifier, SwappedPeersThatStillMatchInSize) {
  // Ranks 1 and 2 exchange their block of the first all-gather step's
  // source: every size still matches, only the content is wrong.
  verify::Problem p = correct(Coll::AllGather);
  std::swap(p.plans[1].channels[0].steps[0].dstOff, p.plans[2].channels[0].steps[0].dstOff);
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
}

TEST(Verifier, ChunkShiftedByOneElement) {
  verify::Problem p = correct();
  p.plans[3].channels[0].steps[1].srcOff += 1;
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
  EXPECT_NE(r.text().find("MIXED-INDEX"), std::string::npos) << r.text();
}

TEST(Verifier, ReceiveShiftedByOneElement) {
  verify::Problem p = correct();
  auto& last = p.plans[0].channels[0].steps.back();  // the final all-gather receive
  last.dstOff -= 1;
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
}

TEST(Verifier, DroppedPostOp) {
  verify::Problem p = correct();
  for (auto& s : p.plans[2].channels[0].steps) s.flags &= uint8_t(~plan::kPostOp);
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
  EXPECT_NE(r.text().find("post 0"), std::string::npos) << r.text();
}

TEST(Verifier, PreOpAppliedTwiceOrMissing) {
  verify::Problem p = correct(Coll::Reduce);
  for (auto& s : p.plans[1].channels[0].steps) s.flags &= uint8_t(~plan::kPreOp);
  EXPECT_TRUE(verify::verify(p).has(IssueKind::WrongContent));
}

TEST(Verifier, ChunkLargerThanFifoDeadlocks) {
  // Chunks sized for 8 slots (4 pieces) on FIFOs that hold only 3 pieces:
  // every rank blocks in its first send.
  algo::CollArgs a = ringArgs(Coll::AllReduce, 5, 5 * 64);
  a.geometry.nSlots = 8;
  verify::Problem p = problemFor(algo::buildRing, a, false);
  p.geometry.nSlots = 3;
  verify::Result r = verify::verify(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.has(IssueKind::Deadlock)) << r.text();
  EXPECT_FALSE(r.has(IssueKind::NoSender)) << r.text();
}

TEST(Verifier, ChunkEqualToFifoDeadlocksInFusedStep) {
  // A chunk exactly as large as the FIFO: the sends fit, but the fused
  // receive-reduce-send then finds every downstream FIFO full.
  algo::CollArgs a = ringArgs(Coll::AllReduce, 3, 3 * 64);
  a.geometry.nSlots = 8;
  verify::Problem p = problemFor(algo::buildRing, a, false);
  p.geometry.nSlots = 4;
  EXPECT_TRUE(verify::verify(p).has(IssueKind::Deadlock));
}

TEST(Verifier, SizeMismatch) {
  verify::Problem p = correct();
  p.plans[1].channels[0].steps[1].count -= 1;
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(IssueKind::SizeMismatch)) << r.text();
}

TEST(Verifier, Leftover) {
  verify::Problem p = correct();
  p.plans[2].channels[0].steps.pop_back();  // the last receive never happens
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(IssueKind::Leftover)) << r.text();
  EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
}

TEST(Verifier, FifoSharedByTwoChannels) {
  algo::CollArgs a = ringArgs(Coll::AllReduce);
  a.nChannels = 2;
  verify::Problem p = problemFor(algo::buildRing, a, false);
  for (auto& s : p.plans[0].channels[1].steps) s.conn = 0;
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(IssueKind::FifoShared)) << r.text();
}

TEST(Verifier, UninitialisedRead) {
  verify::Problem p = correct(Coll::AllGather);
  p.plans[0].channels[0].steps[0].src = Buf::Recv;  // reads Recv before anything wrote it
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(IssueKind::Uninitialised)) << r.text();
}

TEST(Verifier, UninitialisedScratch) {
  verify::Problem p = correct(Coll::Broadcast);
  p.plans[0].scratchElems = 1000;
  p.plans[0].channels[0].steps[0].src = Buf::Scratch;
  EXPECT_TRUE(verify::verify(p).has(IssueKind::Uninitialised));
}

TEST(Verifier, OutOfBounds) {
  verify::Problem p = correct();
  p.plans[1].channels[0].steps.back().dstOff += 1000;
  EXPECT_TRUE(verify::verify(p).has(IssueKind::OutOfBounds));
}

TEST(Verifier, ReduceMustNotWriteNonRootRecv) {
  verify::Problem p = correct(Coll::Reduce);
  // Rank 1 is not the root: it has no receive buffer.
  p.plans[1].channels[0].steps[0].dst = Buf::Recv;
  EXPECT_TRUE(verify::verify(p).has(IssueKind::OutOfBounds));
}

TEST(Verifier, InPlaceHazardIsCaught) {
  // Each rank first overwrites Recv block `rank` (shifted data), then runs
  // the correct AllGather. Out of place the first real step rewrites that
  // block, so the result is right; in place the block is the Send buffer, so
  // the data then sent is wrong, and the verifier must see it.
  for (bool inPlace : {false, true}) {
    verify::Problem p = correct(Coll::AllGather, inPlace);
    for (auto& pl : p.plans) {
      auto& st = pl.channels[0].steps;
      st.insert(st.begin(), plan::copy(Buf::Send, 1, Buf::Recv, uint64_t(pl.rank) * 1000, 999));
    }
    verify::Result r = verify::verify(p);
    if (inPlace)
      EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
    else
      EXPECT_TRUE(r.ok) << r.text();
  }
}

TEST(Verifier, DuplicateContributionIsCaught) {
  // Reduce over 3 ranks, chain 1 -> 2 -> 0. Rank 1 also sends its input
  // straight to the root, which reduces both: rank 1 counts twice.
  verify::Problem p = problemFor(algo::buildRing, ringArgs(Coll::Reduce, 3), false);
  plan::Step& first = p.plans[1].channels[0].steps[0];
  first.nSend = 2;
  first.sendPeer[1] = 0;
  plan::Step& last = p.plans[0].channels[0].steps[0];
  last.nRecv = 2;
  last.recvPeer[1] = 1;
  verify::Result r = verify::verify(p);
  EXPECT_TRUE(r.has(IssueKind::WrongContent)) << r.text();
  EXPECT_NE(r.text().find("DUPLICATE"), std::string::npos) << r.text();
}

}  // namespace
}  // namespace weft::test
