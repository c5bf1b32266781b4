// The diagnosis verdict as a pure function: given every rank's state, the
// text names the ranks that have not entered the collective, those in a
// different one, those that do not answer, and whom the stuck ranks wait on.
#include <signal.h>

#include <gtest/gtest.h>

#include "algorithms/plan.h"
#include "src/core/diagnose.h"

namespace weft {
namespace {

constexpr int32_t kAllReduce = static_cast<int32_t>(plan::Coll::AllReduce);
constexpr int32_t kBroadcast = static_cast<int32_t>(plan::Coll::Broadcast);
constexpr int32_t kSendRecv = static_cast<int32_t>(plan::Coll::SendRecv);

RankReport in(int rank, uint64_t seq, int32_t coll, int waitPeer = -1, bool forSend = false) {
  RankReport r;
  r.rank = rank;
  r.answered = true;
  r.state.seq = seq;
  r.state.coll = coll;
  r.state.count = 1024;
  r.state.bytes = 4096;
  r.state.phase = static_cast<int32_t>(CallPhase::Running);
  if (waitPeer >= 0) {
    r.state.channel = 0;
    r.state.step = 3;
    r.state.waitPeer = waitPeer;
    r.state.waitSend = forSend;
  }
  return r;
}

RankReport done(int rank, uint64_t seq, int32_t coll) {
  RankReport r = in(rank, seq, coll);
  r.state.phase = static_cast<int32_t>(CallPhase::Done);
  return r;
}

RankReport silent(int rank, const char* why) {
  RankReport r;
  r.rank = rank;
  r.why = why;
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DiagnoseVerdict, NamesTheRankThatHasNotEntered) {
  // Ranks 0, 1, 3 are in collective #2; rank 2 finished #1 and went elsewhere.
  Verdict v = judgeCallStates({in(0, 2, kAllReduce, 3), in(1, 2, kAllReduce, 2, true), done(2, 1, kAllReduce),
                               in(3, 2, kAllReduce, 2)});
  EXPECT_TRUE(v.inCollective);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.coll, kAllReduce);
  EXPECT_EQ(v.notEntered, std::vector<int>({2}));
  EXPECT_EQ(v.entered, std::vector<int>({0, 1, 3}));
  EXPECT_TRUE(v.mismatched.empty());
  EXPECT_TRUE(v.notAnswering.empty());
  EXPECT_EQ(v.reporter, 0);
  EXPECT_TRUE(has(v.summary, "[diagnosis of #2 AllReduce:")) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 2 not entered (rank 2: finished #1 AllReduce")) << v.summary;
  EXPECT_TRUE(has(v.summary, "ranks 1 3 waiting on rank 2")) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 0 waiting on rank 3")) << v.summary;
  ASSERT_EQ(v.lines.size(), 4u);
  EXPECT_TRUE(has(v.lines[2], "rank 2: HAS NOT ENTERED #2 AllReduce")) << v.lines[2];
  EXPECT_TRUE(has(v.lines[1], "channel 0 step 3 waiting for a free slot toward rank 2")) << v.lines[1];
  EXPECT_TRUE(has(v.lines[3], "waiting for data from rank 2")) << v.lines[3];
  EXPECT_TRUE(has(v.lines[0], "4096 bytes moved")) << v.lines[0];
}

TEST(DiagnoseVerdict, NamesBothCollectivesOfAMismatch) {
  Verdict v = judgeCallStates({in(0, 5, kAllReduce, 1), in(1, 5, kBroadcast, 0), in(2, 5, kAllReduce, 1)});
  EXPECT_EQ(v.coll, kAllReduce);  // the kind most ranks at #5 are in
  EXPECT_EQ(v.mismatched, std::vector<int>({1}));
  EXPECT_TRUE(v.notEntered.empty());
  EXPECT_TRUE(has(v.summary, "MISMATCH rank 1 is in #5 Broadcast, not AllReduce")) << v.summary;
  EXPECT_TRUE(has(v.lines[1], "MISMATCH: in #5 Broadcast while rank 0 is in #5 AllReduce")) << v.lines[1];
}

TEST(DiagnoseVerdict, ReportsRanksThatDoNotAnswer) {
  Verdict v = judgeCallStates({silent(0, "gone (connection closed without goodbye)"), in(1, 7, kAllReduce, 0),
                               in(2, 7, kAllReduce, 1)});
  EXPECT_EQ(v.notAnswering, std::vector<int>({0}));
  EXPECT_EQ(v.reporter, 1);  // the lowest live rank inside the collective
  EXPECT_TRUE(has(v.summary, "rank 0 not answering (dead or unreachable)")) << v.summary;
  EXPECT_TRUE(has(v.lines[0], "NOT ANSWERING (dead or unreachable): gone")) << v.lines[0];
}

TEST(DiagnoseVerdict, StillInAnEarlierCollectiveOrInSendRecvIsNotEntered) {
  RankReport p2p = in(2, 4, kSendRecv, 0);  // a send/recv group after #4
  Verdict v = judgeCallStates({in(0, 5, kAllReduce, 1), in(1, 4, kAllReduce, 3), p2p, in(3, 5, kAllReduce, 1)});
  EXPECT_EQ(v.seq, 5u);
  EXPECT_EQ(v.notEntered, std::vector<int>({1, 2}));
  EXPECT_TRUE(has(v.summary, "ranks 1 2 not entered (rank 1: in #4 AllReduce")) << v.summary;
  EXPECT_TRUE(has(v.lines[2], "a send/recv group (1024 call(s)) after #4")) << v.lines[2];
}

TEST(DiagnoseVerdict, NoRankInsideACollective) {
  Verdict v = judgeCallStates({done(0, 3, kAllReduce), done(1, 3, kAllReduce)});
  EXPECT_FALSE(v.inCollective);
  EXPECT_TRUE(has(v.summary, "no rank is inside a collective")) << v.summary;
  EXPECT_TRUE(has(v.lines[1], "finished #3 AllReduce")) << v.lines[1];
}

TEST(DiagnoseVerdict, LongListsAreCut) {
  std::vector<RankReport> ranks;
  ranks.push_back(in(0, 2, kAllReduce, 1));
  for (int r = 1; r < 20; r++) ranks.push_back(done(r, 1, kAllReduce));
  Verdict v = judgeCallStates(ranks);
  EXPECT_EQ(v.notEntered.size(), 19u);
  EXPECT_TRUE(has(v.summary, "ranks 1 2 3 4 5 6 7 8 and 11 more not entered")) << v.summary;
}

TEST(DiagnoseVerdict, ReportHasAHeaderALinePerRankAndTheSummary) {
  Verdict v = judgeCallStates({in(0, 2, kAllReduce, 1), done(1, 1, kAllReduce)});
  std::string t = formatReport("trainer", 0, "on request", v);
  EXPECT_TRUE(has(t, "diagnosis of communicator 'trainer' (2 ranks) by rank 0, on request:\n")) << t;
  EXPECT_TRUE(has(t, "\n  rank 0: in #2 AllReduce")) << t;
  EXPECT_TRUE(has(t, "\n  rank 1: HAS NOT ENTERED #2 AllReduce")) << t;
  EXPECT_TRUE(has(t, "\n" + v.summary + "\n")) << t;
}

TEST(DiagnoseSignal, ParsesNamesAndNumbers) {
  EXPECT_EQ(parseDiagnoseSignal(""), 0);
  EXPECT_EQ(parseDiagnoseSignal("off"), 0);
  EXPECT_EQ(parseDiagnoseSignal("0"), 0);
  EXPECT_EQ(parseDiagnoseSignal("USR1"), SIGUSR1);
  EXPECT_EQ(parseDiagnoseSignal("sigusr2"), SIGUSR2);
  EXPECT_EQ(parseDiagnoseSignal("SIGHUP"), SIGHUP);
  EXPECT_EQ(parseDiagnoseSignal(std::to_string(SIGUSR1)), SIGUSR1);
  EXPECT_EQ(parseDiagnoseSignal("KILL"), -1);
  EXPECT_EQ(parseDiagnoseSignal("9"), -1);
  EXPECT_EQ(parseDiagnoseSignal("11"), -1);
  EXPECT_EQ(parseDiagnoseSignal("usr3"), -1);
  EXPECT_EQ(parseDiagnoseSignal("1000"), -1);
}

}  // namespace
}  // namespace weft
