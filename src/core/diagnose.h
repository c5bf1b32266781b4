// "Who has not arrived": diagnosis of a hung collective.
//
// Every rank keeps its CallState (src/core/call_state.h): the number and
// kind of the collective it is in or last finished, how far it got and the
// peer it waits on. A diagnosis gathers every rank's state over the
// bootstrap (each rank answers from its bootstrap reader thread, so a rank
// blocked inside a call answers too; the gather is bounded by
// kDiagnoseWaitMs, and a rank that does not answer is reported as such) and
// judges it: which ranks have not entered the collective the others are in,
// which are in a different one, which do not answer, and whom the stuck
// ranks wait on.
//
// Run on a timeout (its summary joins the timeout error; the lowest rank
// inside the collective logs the whole report at WARN), by
// weftCommDiagnose, and on the signal WEFT_DIAGNOSE_SIGNAL names (for each
// communicator of the process that gets it, the lowest rank that answers
// the gather, rank 0 unless it is gone, logs the report; the receiving rank
// logs which rank that is).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/call_state.h"

struct weftComm;

namespace weft {

// The longest a gather waits for the ranks' answers, all together.
constexpr int64_t kDiagnoseWaitMs = 2000;

// One rank as the verdict sees it.
struct RankReport {
  int rank = 0;
  bool answered = false;
  std::string why;  // why it did not answer
  RankCallState state;
};

struct Verdict {
  bool inCollective = false;  // some rank is inside (or failed in) a collective
  uint64_t seq = 0;           // that collective's number (the highest such)
  int32_t coll = -1;          // and kind (the one most ranks at seq are in)
  int reporter = -1;          // the lowest answering rank in it
  std::vector<int> entered, notEntered, mismatched, notAnswering;
  std::string summary;             // one line, starts with kDiagnosisMarker
  std::vector<std::string> lines;  // one per rank
};

constexpr const char* kDiagnosisMarker = "[diagnosis";

// Pure: the verdict on the ranks' states (index = rank).
Verdict judgeCallStates(const std::vector<RankReport>& ranks);
// Pure: the whole report, several lines: a header naming the communicator
// and `trigger`, a line per rank, the summary.
std::string formatReport(const std::string& commName, int byRank, const std::string& trigger, const Verdict& v);
// Pure: the signal WEFT_DIAGNOSE_SIGNAL names ("USR1", "SIGUSR1", "usr2",
// "10", ...); 0 for off ("", "0", "off", "none"); -1 for a name that is not
// a signal weft can catch.
int parseDiagnoseSignal(const std::string& text);

// Every rank's state of comm, gathered over the bootstrap within waitMs.
std::vector<RankReport> gatherCallStates(weftComm* comm, int64_t waitMs);
// On a timeout: gathers, logs the report (WARN on the reporter, INFO on
// the others) and returns the summary for the error message. Never throws.
std::string explainTimeout(weftComm* comm);
// weftCommDiagnose and the signal: gathers, logs the report at WARN and
// returns it.
std::string diagnoseComm(weftComm* comm, const std::string& trigger);

// createComm: this rank answers its peers' diagnosis queries.
void answerDiagnosisQueries(weftComm* comm);
// WEFT_DIAGNOSE_SIGNAL's handler and the thread that runs the diagnosis when
// it arrives, installed once per process (by the first communicator created
// while the setting names a signal). weftInvalidArgument for a bad value.
void installDiagnoseSignal();

}  // namespace weft
