// The pure part of the diagnosis: from the ranks' states to the verdict
// and its text (src/core/diagnose.h). Tested without any communicator.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "algorithms/plan.h"
#include "src/core/diagnose.h"

namespace weft {
namespace {

// At most this many ranks are named per list of the one-line summary.
constexpr size_t kNamedRanks = 8;

bool isPointToPoint(int32_t coll) { return coll == static_cast<int32_t>(plan::Coll::SendRecv); }

const char* collText(int32_t coll) {
  return coll < 0 ? "nothing" : plan::collName(static_cast<plan::Coll>(coll));
}

// "#2 AllReduce (count 1024)", or "a send/recv group (3 calls) after #2".
std::string callText(const RankCallState& s) {
  if (s.coll < 0) return "no collective yet";
  if (isPointToPoint(s.coll))
    return "a send/recv group (" + std::to_string(s.count) + " call(s)) after #" + std::to_string(s.seq);
  return "#" + std::to_string(s.seq) + " " + collText(s.coll) + " (count " + std::to_string(s.count) + ")";
}

bool inside(const RankCallState& s) {
  const auto p = static_cast<CallPhase>(s.phase);
  return p == CallPhase::Running || p == CallPhase::Failed || p == CallPhase::Launched;
}

// What a rank is doing, in words: "in #2 AllReduce (count 8), channel 0
// step 3, 4096 bytes moved, waiting for data from rank 1".
std::string doingText(const RankCallState& s) {
  std::string t;
  switch (static_cast<CallPhase>(s.phase)) {
    case CallPhase::Idle: return "no operation yet";
    case CallPhase::Running: t = "in "; break;
    case CallPhase::Done: return "finished " + callText(s) + ", in no operation since";
    case CallPhase::Failed: t = "failed in "; break;
    case CallPhase::Launched: return "launched " + callText(s) + " on a CUDA stream (device progress not tracked)";
  }
  t += callText(s) + ", " + std::to_string(s.bytes) + " bytes moved";
  if (s.waitPeer >= 0)
    t += ", channel " + std::to_string(s.channel) + " step " + std::to_string(s.step) +
         (s.waitSend ? " waiting for a free slot toward rank " : " waiting for data from rank ") +
         std::to_string(s.waitPeer);
  return t;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string t = ranks.size() == 1 ? "rank" : "ranks";
  for (size_t i = 0; i < ranks.size() && i < kNamedRanks; i++) t += " " + std::to_string(ranks[i]);
  if (ranks.size() > kNamedRanks) t += " and " + std::to_string(ranks.size() - kNamedRanks) + " more";
  return t;
}

// The collective the verdict is about: the highest number any rank is
// inside of; its kind is the one most ranks at that number are in (ties:
// the lowest rank's).
void chooseCollective(const std::vector<RankReport>& ranks, Verdict* v) {
  for (const RankReport& r : ranks)
    if (r.answered && inside(r.state) && !isPointToPoint(r.state.coll)) {
      v->inCollective = true;
      v->seq = std::max(v->seq, r.state.seq);
    }
  if (!v->inCollective) return;
  std::map<int32_t, int> votes;
  for (const RankReport& r : ranks)
    if (r.answered && r.state.seq == v->seq && !isPointToPoint(r.state.coll)) votes[r.state.coll]++;
  int best = 0;
  for (const RankReport& r : ranks)
    if (r.answered && r.state.seq == v->seq && !isPointToPoint(r.state.coll) && votes[r.state.coll] > best) {
      best = votes[r.state.coll];
      v->coll = r.state.coll;
    }
}

// The first rank at the verdict's number in the verdict's collective.
int firstIn(const std::vector<RankReport>& ranks, const Verdict& v) {
  for (const RankReport& r : ranks)
    if (r.answered && r.state.seq == v.seq && r.state.coll == v.coll) return r.rank;
  return -1;
}

std::string judgeRank(const RankReport& r, const std::vector<RankReport>& ranks, Verdict* v) {
  const std::string who = "rank " + std::to_string(r.rank) + ": ";
  if (!r.answered) {
    v->notAnswering.push_back(r.rank);
    return who + "NOT ANSWERING (dead or unreachable): " + r.why;
  }
  const RankCallState& s = r.state;
  if (!v->inCollective) return who + doingText(s);
  const std::string target = "#" + std::to_string(v->seq) + " " + collText(v->coll);
  if (s.seq < v->seq || (s.seq == v->seq && isPointToPoint(s.coll))) {
    v->notEntered.push_back(r.rank);
    return who + "HAS NOT ENTERED " + target + ": " + doingText(s);
  }
  if (s.seq == v->seq && s.coll != v->coll) {
    v->mismatched.push_back(r.rank);
    return who + "MISMATCH: in #" + std::to_string(s.seq) + " " + collText(s.coll) + " while rank " +
           std::to_string(firstIn(ranks, *v)) + " is in " + target + ": " + doingText(s);
  }
  if (s.seq > v->seq) return who + "past " + target + ": " + doingText(s);
  v->entered.push_back(r.rank);
  if (v->reporter < 0) v->reporter = r.rank;
  return who + doingText(s);
}

void summarize(const std::vector<RankReport>& ranks, Verdict* v) {
  std::string t = kDiagnosisMarker;
  if (v->inCollective) t += " of #" + std::to_string(v->seq) + " " + collText(v->coll);
  t += ":";
  std::vector<std::string> parts;
  if (!v->inCollective) parts.push_back("no rank is inside a collective");
  if (!v->notEntered.empty()) {
    std::string p = rankList(v->notEntered) + " not entered (";
    const RankCallState& first = ranks[v->notEntered[0]].state;
    p += "rank " + std::to_string(v->notEntered[0]) + ": " + doingText(first) + ")";
    parts.push_back(p);
  }
  for (size_t i = 0; i < v->mismatched.size() && i < kNamedRanks; i++) {
    const RankCallState& s = ranks[v->mismatched[i]].state;
    parts.push_back("MISMATCH rank " + std::to_string(v->mismatched[i]) + " is in #" + std::to_string(s.seq) + " " +
                    collText(s.coll) + ", not " + collText(v->coll));
  }
  if (!v->notAnswering.empty())
    parts.push_back(rankList(v->notAnswering) + " not answering (dead or unreachable)");
  std::map<int, std::vector<int>> waitingOn;  // peer -> ranks waiting on it
  for (const RankReport& r : ranks)
    if (r.answered && inside(r.state) && r.state.waitPeer >= 0) waitingOn[r.state.waitPeer].push_back(r.rank);
  for (const auto& [peer, waiters] : waitingOn)
    parts.push_back(rankList(waiters) + " waiting on rank " + std::to_string(peer));
  if (v->inCollective && parts.empty()) parts.push_back("every rank is in it, none waits");
  for (size_t i = 0; i < parts.size(); i++) t += (i ? "; " : " ") + parts[i];
  v->summary = t + "]";
}

}  // namespace

Verdict judgeCallStates(const std::vector<RankReport>& ranks) {
  Verdict v;
  chooseCollective(ranks, &v);
  for (const RankReport& r : ranks) v.lines.push_back(judgeRank(r, ranks, &v));
  summarize(ranks, &v);
  return v;
}

std::string formatReport(const std::string& commName, int byRank, const std::string& trigger, const Verdict& v) {
  std::string t = "diagnosis of communicator '" + commName + "' (" + std::to_string(v.lines.size()) +
                  " ranks) by rank " + std::to_string(byRank) + ", " + trigger + ":\n";
  for (const std::string& line : v.lines) t += "  " + line + "\n";
  t += v.summary + "\n";
  return t;
}

int parseDiagnoseSignal(const std::string& text) {
  std::string s;
  for (char c : text) s += static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (s.empty() || s == "0" || s == "OFF" || s == "NONE") return 0;
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  static const std::pair<const char*, int> names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},
                                                      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
                                                      {"WINCH", SIGWINCH}};
  for (const auto& [name, sig] : names)
    if (s == name) return sig;
  char* end = nullptr;
  const long n = strtol(s.c_str(), &end, 10);
  if (end == s.c_str() || *end || n < 1 || n >= NSIG || n == SIGKILL || n == SIGSTOP || n == SIGSEGV ||
      n == SIGBUS || n == SIGFPE || n == SIGILL)
    return -1;
  return static_cast<int>(n);
}

}  // namespace weft
