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
#include <set>
#include <sstream>
#include <thread>

#include "src/core/comm.h"
#include "src/util/error.h"
#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft {
namespace {

constexpr uint32_t kStateQuery = 0x44494147;  // "DIAG": send me your RankCallState
// "DPRT": gather and print the report; the signal arrived at another rank.
constexpr uint32_t kPrintQuery = 0x44505254;
struct PrintRequest {
  uint32_t kind = kPrintQuery;
  int32_t fromRank = -1;
  int32_t sig = 0;
};

std::string signalTrigger(int sig, int toRank) {
  return "on signal " + std::to_string(sig) + " (WEFT_DIAGNOSE_SIGNAL) to rank " + std::to_string(toRank);
}

int64_t waitBound(const weftComm* comm) { return std::min<int64_t>(kDiagnoseWaitMs, comm->timeoutMs); }

void logLines(const std::string& report, bool warn) {
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    if (warn) WEFT_WARN("%s", line.c_str());
    else WEFT_INFO(kColl, "%s", line.c_str());
  }
}

// ---- a report printed by the lowest live rank --------------------------
// A signal may reach any rank (an operator signals the process they found
// stuck), but one place should hold the report: the lowest rank that
// answers the gather, rank 0 unless it is gone. The receiving rank gathers
// (which also tells it who is alive) and asks that rank to print; the
// request is answered at once from the bootstrap reader thread, and the
// report runs on a thread of its own.

// Never destroyed: a printing thread may still end while the process exits.
std::mutex pendingMutex;
std::set<const weftComm*>& pendingReports() {  // at most one queued report per communicator
  static auto* pending = new std::set<const weftComm*>;
  return *pending;
}

void reportOnThread(weftComm* comm, const std::string& trigger) {
  {
    std::lock_guard<std::mutex> lock(pendingMutex);
    if (!pendingReports().insert(comm).second) return;  // one is already on its way
  }
  std::thread([comm, trigger] {
    forEachLiveComm([&](weftComm* live) {  // comm may have been destroyed since
      if (live != comm) return;
      setLogRank(live->rank);
      try {
        diagnoseComm(live, trigger);
      } catch (const std::exception& e) {
        WEFT_WARN("diagnosis %s failed: %s", trigger.c_str(), e.what());
      }
    });
    std::lock_guard<std::mutex> lock(pendingMutex);
    pendingReports().erase(comm);
  }).detach();
}

void reportFromLowestLiveRank(weftComm* comm, int sig) {
  const std::string trigger = signalTrigger(sig, comm->rank);
  try {
    const std::vector<RankReport> ranks = gatherCallStates(comm, waitBound(comm));
    int lowest = comm->rank;
    for (const RankReport& r : ranks)
      if (r.answered) {
        lowest = r.rank;
        break;
      }
    if (lowest != comm->rank) {
      PrintRequest req;
      req.fromRank = comm->rank;
      req.sig = sig;
      const char* p = reinterpret_cast<const char*>(&req);
      const Bootstrap::QueryResult q = comm->bootstrap->query({lowest}, std::vector<char>(p, p + sizeof(req)),
                                                             waitBound(comm));
      if (q.answered[0] && q.replies[0].size() == 1) {
        WEFT_WARN("%s: the diagnosis of communicator '%s' is printed by rank %d, the lowest rank that answers",
                  trigger.c_str(), comm->name.c_str(), lowest);
        return;
      }
      WEFT_WARN("%s: rank %d did not take the diagnosis (%s); this rank prints it", trigger.c_str(), lowest,
                q.why[0].c_str());
    }
    logLines(formatReport(comm->name, comm->rank, trigger, judgeCallStates(ranks)), true);
  } catch (const std::exception& e) {
    WEFT_WARN("diagnosis %s failed: %s", trigger.c_str(), e.what());
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
      reportFromLowestLiveRank(comm, sig);
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
  WEFT_INFO(kInit,
            "signal %d (WEFT_DIAGNOSE_SIGNAL=%s): the lowest rank that answers logs a diagnosis of each "
            "communicator of this process",
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
    if (request.size() >= sizeof(kind)) memcpy(&kind, request.data(), sizeof(kind));
    if (kind == kPrintQuery && request.size() == sizeof(PrintRequest)) {
      PrintRequest req;
      memcpy(&req, request.data(), sizeof(req));
      reportOnThread(raw, signalTrigger(req.sig, req.fromRank));
      return std::vector<char>(1, 1);
    }
    if (kind != kStateQuery || request.size() != sizeof(kind)) return std::vector<char>();
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
