// Gathering the ranks' states over the bootstrap, and the three ways a
// diagnosis starts: a timeout, weftCommDiagnose, a signal.
#include "src/core/diagnose.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include "src/core/comm.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft {
namespace {

constexpr uint32_t kStateQuery = 0x44494147;  // "DIAG": send me your RankCallState

int64_t waitBound(const weftComm* comm) { return std::min<int64_t>(kDiagnoseWaitMs, comm->timeoutMs); }

void logLines(const std::string& report, bool warn) {
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    if (warn) WEFT_WARN("%s", line.c_str());
    else WEFT_INFO(kColl, "%s", line.c_str());
  }
}

// ---- WEFT_DIAGNOSE_SIGNAL -------------------------------------------------
// The handler only writes a byte into a pipe (all a signal handler may do);
// a thread of its own reads it and runs the diagnosis of every live
// communicator of the process.

int signalPipe[2] = {-1, -1};
struct sigaction previousAction;

void onDiagnoseSignal(int sig, siginfo_t* info, void* context) {
  const int savedErrno = errno;
  const char byte = 1;
  if (write(signalPipe[1], &byte, 1) < 0) {
    // A full pipe already holds a request.
  }
  errno = savedErrno;
  // An application's own handler for the same signal still runs.
  if (previousAction.sa_flags & SA_SIGINFO) {
    if (previousAction.sa_sigaction) previousAction.sa_sigaction(sig, info, context);
  } else if (previousAction.sa_handler != SIG_DFL && previousAction.sa_handler != SIG_IGN) {
    previousAction.sa_handler(sig);
  }
}

void signalWatcher(int sig) {
  for (;;) {
    char byte;
    const ssize_t n = read(signalPipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    forEachLiveComm([sig](weftComm* comm) {
      setLogRank(comm->rank);
      diagnoseComm(comm, std::string("on signal ") + std::to_string(sig) + " (WEFT_DIAGNOSE_SIGNAL)");
    });
  }
}

// Returns whether the handler is now installed.
bool startSignalWatcher() {
  const std::string text = settings::get(settings::kDiagnoseSignal).value_or("");
  const int sig = parseDiagnoseSignal(text);
  if (sig == 0) return false;
  if (sig < 0)
    raise(weftInvalidArgument, "WEFT_DIAGNOSE_SIGNAL=%s is not a signal weft can catch (use USR1, USR2, a name "
          "such as HUP, or a number; 0 or off for none)", text.c_str());
  if (pipe2(signalPipe, O_CLOEXEC) != 0) raiseErrno("pipe2 for WEFT_DIAGNOSE_SIGNAL");
  fcntl(signalPipe[1], F_SETFL, O_NONBLOCK);
  std::thread(signalWatcher, sig).detach();
  struct sigaction action = {};
  action.sa_sigaction = onDiagnoseSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(sig, &action, &previousAction) != 0) raiseErrno("sigaction for WEFT_DIAGNOSE_SIGNAL");
  WEFT_INFO(kInit, "signal %d (WEFT_DIAGNOSE_SIGNAL=%s) logs a diagnosis of every communicator of this process",
            sig, text.c_str());
  return true;
}

}  // namespace

std::vector<RankReport> gatherCallStates(weftComm* comm, int64_t waitMs) {
  const int n = comm->nranks;
  std::vector<int> peers(n);
  std::iota(peers.begin(), peers.end(), 0);
  std::vector<char> request(sizeof(kStateQuery));
  memcpy(request.data(), &kStateQuery, sizeof(kStateQuery));
  Bootstrap::QueryResult q = comm->bootstrap->query(peers, request, waitMs);
  std::vector<RankReport> out(n);
  for (int r = 0; r < n; r++) {
    out[r].rank = r;
    if (r == comm->rank) {  // this rank's own state needs no round trip
      out[r].answered = true;
      out[r].state = comm->callState.snapshot();
    } else if (q.answered[r] && q.replies[r].size() == sizeof(RankCallState)) {
      out[r].answered = true;
      memcpy(&out[r].state, q.replies[r].data(), sizeof(RankCallState));
    } else {
      out[r].why = q.answered[r] ? "malformed answer (" + std::to_string(q.replies[r].size()) + " bytes)" : q.why[r];
    }
  }
  return out;
}

std::string explainTimeout(weftComm* comm) {
  // This rank's timeout is the cause; whatever happens while the diagnosis
  // waits for answers (a peer that timed out first and exited) is a consequence.
  comm->claimAsyncError(weftTimeout, "rank " + std::to_string(comm->rank) + ": a call timed out (WEFT_TIMEOUT_MS)");
  try {
    const Verdict v = judgeCallStates(gatherCallStates(comm, waitBound(comm)));
    // One full report per hang, from the lowest rank inside the collective;
    // every rank's error carries the summary.
    logLines(formatReport(comm->name, comm->rank, "after a timeout on rank " + std::to_string(comm->rank), v),
             v.reporter == comm->rank || v.reporter < 0);
    return v.summary;
  } catch (const std::exception& e) {
    return std::string(kDiagnosisMarker) + " failed: " + e.what() + "]";
  }
}

std::string diagnoseComm(weftComm* comm, const std::string& trigger) {
  const Verdict v = judgeCallStates(gatherCallStates(comm, waitBound(comm)));
  const std::string report = formatReport(comm->name, comm->rank, trigger, v);
  logLines(report, true);
  return report;
}

void answerDiagnosisQueries(weftComm* comm) {
  weftComm* raw = comm;
  comm->bootstrap->setQueryHandler([raw](int, const std::vector<char>& request) {
    uint32_t kind = 0;
    if (request.size() == sizeof(kind)) memcpy(&kind, request.data(), sizeof(kind));
    if (kind != kStateQuery) return std::vector<char>();
    const RankCallState s = raw->callState.snapshot();
    const char* p = reinterpret_cast<const char*>(&s);
    return std::vector<char>(p, p + sizeof(s));
  });
}

// Until a handler is installed, every new communicator looks at the
// setting again (it may have been set after the first one).
void installDiagnoseSignal() {
  static std::mutex mu;
  static bool installed = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!installed) installed = startSignalWatcher();
}

}  // namespace weft
