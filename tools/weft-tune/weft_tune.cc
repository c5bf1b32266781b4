// weft-tune: measures AllReduce per algorithm on this machine and either
// writes the cost model's calibration (-o FILE, loaded with WEFT_TUNE_FILE)
// or checks the selector's choices against the measurement (--check).
//
// Ranks are threads of this process (-t N) or the processes of a launcher
// (weft-run, mpirun, torchrun: one rank each). Every algorithm gets its own
// communicator (split from one base communicator, its choice forced), plus
// one left to the selector, and all are timed interleaved
// (interleaved_timing.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/direct.h"
#include "algorithms/selector.h"
#include "benchmarks/common/launch.h"
#include "src/core/comm.h"
#include "src/core/direct_comm.h"
#include "src/core/ll_comm.h"
#include "src/core/tune_file.h"
#include "tools/weft-tune/check.h"
#include "tools/weft-tune/fit.h"
#include "tools/weft-tune/interleaved_timing.h"
#include "weft/weft.h"

namespace {

using weft::algo::AlgoId;
using weft::plan::Coll;

struct Options {
  int threads = 0;  // 0: one rank per launched process
  bool socket = false;
  size_t minBytes = 8, maxBytes = 64 << 20;
  double factor = 2;  // points close enough to place crossovers
  weft::tune::SweepOptions sweep;
  std::string out = "weft-tune.conf";
  bool check = false;
  std::vector<std::string> merge;  // --merge: tune files to combine
  double tolerance = 0.10;
  bool registered = false;  // buffers from weftMemAlloc, registered; a "direct" column
  int attempts = 3;  // --check: sizes that miss are timed again, up to this many tries in all
};

[[noreturn]] void usage(int code) {
  fprintf(code ? stderr : stdout,
          "usage: weft-tune [-t NRANKS] [--transport shm|socket] [-b MIN] [-e MAX] [-f FACTOR] [-r ROUNDS]\n"
          "                 [--sample-us US] [--registered] [-o FILE | --check [--tolerance FRACTION] [--attempts N]]\n"
          "       weft-tune --merge FILE... -o FILE\n"
          "Times AllReduce (float32 sum) with each algorithm, interleaved, median of ROUNDS samples per size.\n"
          "  -o FILE   write the fitted constants and measured curves (default weft-tune.conf);\n"
          "            communicators load them with WEFT_TUNE_FILE=FILE\n"
          "  --check   also time the selector's own choice (WEFT_TUNE_FILE, WEFT_ALGO as set) and report,\n"
          "            per size, its time over the best algorithm's (median of per-round ratios); exit 1 when\n"
          "            any is above 1+FRACTION (default 0.10) in each of N tries (default 3: sizes above\n"
          "            it are timed again, the best try counts)\n"
          "  --registered  buffers from weftMemAlloc registered with every communicator, and one more\n"
          "            column, direct: the single-copy path forced; a calibration also writes the size from\n"
          "            which single-copy is the fastest (direct_min_bytes)\n"
          "Ranks: -t N threads in this process, or one per process under a launcher\n"
          "(benchmarks/weft-run -np N weft-tune ...). Sizes default to 8 B .. 64 MB, x2.\n"
          "  --merge   combine calibrations of separate runs (same shape and sizes) into one file: the\n"
          "            median of every constant and curve point\n");
  exit(code);
}

size_t parseBytes(const char* s) {
  char* end = nullptr;
  double v = strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1 << 10; end++; break;
    case 'M': case 'm': v *= 1 << 20; end++; break;
    case 'G': case 'g': v *= 1 << 30; end++; break;
    default: break;
  }
  if (*end || !(v >= 4)) {
    fprintf(stderr, "weft-tune: '%s' is not a size of at least 4 bytes\n", s);
    exit(2);
  }
  return size_t(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "-t") o.threads = atoi(next());
    else if (a == "--transport") {
      std::string t = next();
      if (t != "shm" && t != "socket") usage(2);
      o.socket = t == "socket";
    } else if (a == "-b") o.minBytes = parseBytes(next());
    else if (a == "-e") o.maxBytes = parseBytes(next());
    else if (a == "-f") o.factor = atof(next());
    else if (a == "-r") o.sweep.rounds = atoi(next());
    else if (a == "--sample-us") o.sweep.sampleUs = atof(next());
    else if (a == "-o") o.out = next();
    else if (a == "--check") o.check = true;
    else if (a == "--tolerance") o.tolerance = atof(next());
    else if (a == "--attempts") o.attempts = atoi(next());
    else if (a == "--registered") o.registered = o.sweep.registered = true;
    else if (a == "--merge") {
      while (i + 1 < argc && argv[i + 1][0] != '-') o.merge.push_back(argv[++i]);
      if (o.merge.empty()) usage(2);
    }
    else if (a == "-h" || a == "--help") usage(0);
    else usage(2);
  }
  if (o.threads == 1 || o.threads < 0 || o.maxBytes < o.minBytes || !(o.factor > 1) || o.sweep.rounds < 1 ||
      !(o.sweep.sampleUs > 0) || !(o.tolerance >= 0) || o.attempts < 1)
    usage(2);
  o.sweep.sizes = weft::tune::sweepSizes(o.minBytes, o.maxBytes, o.factor);
  return o;
}

// "%11s" per calibrated algorithm's name, "direct" with registered
// buffers, then `tail` names: the timed communicators' columns.
void printNames(const Options& o, const std::vector<const char*>& tail) {
  for (AlgoId a : weft::tune::calibratedAlgos()) printf(" %11s", weft::algo::algoName(a));
  if (o.registered) printf(" %11s", weft::algo::kDirectName);
  for (const char* t : tail) printf(" %11s", t);
}

bool ok(weftResult_t r, const char* what) {
  if (r == weftSuccess) return true;
  fprintf(stderr, "weft-tune: %s failed: %s: %s\n", what, weftGetErrorString(r), weftGetLastError(nullptr));
  return false;
}

void printHeader(const Options& o, weftComm_t base, const char* ranksAre) {
  const weft::algo::CostInputs& in = base->costBase;
  printf("# weft-tune%s: %d ranks (%s) on %d host(s) over %s, AllReduce float32 sum, median of %d interleaved "
         "samples of ~%.0f us\n",
         o.check ? " --check" : "", in.nranks, ranksAre, in.nHosts, o.socket ? "sockets" : "shared memory",
         o.sweep.rounds, o.sweep.sampleUs);
}

// What the selector runs for an AllReduce of `bytes` on communicator c.
weft::algo::CallChoice choiceFor(weftComm_t c, size_t bytes) {
  weft::algo::CostInputs at = c->costBase;
  at.bytes = bytes;
  return weft::algo::selectCall(Coll::AllReduce, at, c->algoFilter, c->geometry, c->protoFilter);
}

std::string choiceName(const weft::algo::CallChoice& c) {
  return std::string(weft::algo::algoName(c.algo)) + "/" + weft::algo::protoName(c.proto);
}

// The columns a check judges: every calibrated algorithm, then with
// registered buffers the single-copy path.
size_t judgedColumns(const Options& o) { return weft::tune::calibratedAlgos().size() + (o.registered ? 1 : 0); }

// The column of what the selector's communicator (timed.back()) runs at
// `bytes`: the single-copy path with registered buffers from its threshold
// on (src/core/launch.cc: after ll, before the selector's FIFO choice),
// else the selector's algorithm.
size_t chosenColumn(const Options& o, const std::vector<weftComm_t>& timed, size_t bytes) {
  const std::vector<AlgoId> algos = weft::tune::calibratedAlgos();
  weftComm_t autoComm = timed.back();
  const weft::algo::CallChoice c = choiceFor(autoComm, bytes);
  if (o.registered && c.proto != weft::algo::kLowLatency && autoComm->direct && bytes >= autoComm->direct->minBytes())
    return algos.size();
  return std::min(size_t(std::find(algos.begin(), algos.end(), c.algo) - algos.begin()), algos.size() - 1);
}

// What column `column` ran at `bytes`; the selector's own for the chosen
// column of a FIFO algorithm (its protocol may differ from the forced one's).
std::string columnChoice(const std::vector<weftComm_t>& timed, size_t column, size_t bytes, bool chosen) {
  if (column == weft::tune::calibratedAlgos().size()) return weft::algo::kDirectName;
  return choiceName(choiceFor(chosen ? timed.back() : timed[column], bytes));
}

// The verdict at one size: the selector's choice against the fastest
// forced column.
weft::tune::ChoiceVerdict verdictAt(const Options& o, const std::vector<weftComm_t>& timed,
                                    const weft::tune::SweepPoint& p) {
  const long n = long(judgedColumns(o));
  std::vector<std::vector<double>> samples(p.samplesUs.begin(), p.samplesUs.begin() + n);
  std::vector<double> medians(p.medianUs.begin(), p.medianUs.begin() + n);
  return weft::tune::judgeChoice(samples, medians, chosenColumn(o, timed, p.bytes));
}

// --check, best of o.attempts: sizes where the choice is more than the
// tolerance slower are timed again (every communicator, interleaved as
// before), and each size keeps its attempt with the smallest ratio. A
// choice that is really slower stays slower in every attempt; one that lost
// to a burst of other load does not. Every rank decides alike: the points
// are the same on every rank, and so are the selector's inputs.
void retimeMisses(const Options& o, weftComm_t base, const std::vector<weftComm_t>& timed, int rank, int nranks,
                  std::vector<weft::tune::SweepPoint>* points, std::vector<int>* attempts) {
  attempts->assign(points->size(), 1);
  for (int a = 1; a < o.attempts; a++) {
    std::vector<size_t> again;
    weft::tune::SweepOptions s = o.sweep;
    s.sizes.clear();
    for (size_t i = 0; i < points->size(); i++)
      if (verdictAt(o, timed, (*points)[i]).ratio > 1 + o.tolerance) {
        again.push_back(i);
        s.sizes.push_back((*points)[i].bytes);
      }
    if (again.empty()) return;
    if (rank == 0) printf("# attempt %d: timing %zu size(s) again\n", a + 1, again.size());
    std::vector<weft::tune::SweepPoint> re = weft::tune::sweepAllReduce(base, timed, rank, nranks, s);
    for (size_t j = 0; j < again.size(); j++) {
      const size_t i = again[j];
      (*attempts)[i]++;
      if (verdictAt(o, timed, re[j]).ratio < verdictAt(o, timed, (*points)[i]).ratio) (*points)[i] = std::move(re[j]);
    }
  }
}

// Rank 0's report of a --check run; returns the number of sizes where the
// selector's choice is more than the tolerance slower than the best.
int reportCheck(const Options& o, const std::vector<weftComm_t>& timed,
                const std::vector<weft::tune::SweepPoint>& points, const std::vector<int>& attempts) {
  weftComm_t autoComm = timed.back();
  const weft::algo::CostInputs& in = autoComm->costBase;
  const char* tune = getenv("WEFT_TUNE_FILE");
  const std::vector<AlgoId> algos = weft::tune::calibratedAlgos();
  bool curves = false;
  for (AlgoId a : algos) curves |= weft::algo::usesMeasuredCurve(Coll::AllReduce, a, in);
  printf("# selector inputs: %s%s\n", tune ? tune : "no WEFT_TUNE_FILE (model defaults)",
         tune ? (curves ? " (measured curves match this shape)" : " (fitted constants only)") : "");
  printf("%12s %6s", "size", "iters");
  printNames(o, {"auto"});
  printf("  %-18s %-18s %7s %6s %3s\n", "choice", "best", "ch/best", "noise", "try");
  int misses = 0;
  long wrong = 0;
  for (size_t i = 0; i < points.size(); i++) {
    const weft::tune::SweepPoint& p = points[i];
    const weft::tune::ChoiceVerdict v = verdictAt(o, timed, p);
    const bool miss = v.ratio > 1 + o.tolerance;
    misses += miss;
    for (long w : p.wrong) wrong += w;
    printf("%12zu %6d", p.bytes, p.iters);
    for (double us : p.medianUs) printf(" %11.2f", us);
    const size_t chosen = chosenColumn(o, timed, p.bytes);
    printf("  %-18s %-18s %7.3f %5.0f%% %3d%s\n", columnChoice(timed, chosen, p.bytes, true).c_str(),
           columnChoice(timed, v.best, p.bytes, false).c_str(), v.ratio, 100 * v.noise, attempts[i],
           miss ? "  MISS" : "");
  }
  printf("# times: us per call (median over samples of the slowest rank); auto: the selector's own communicator\n");
  printf("# ch/best: the choice's time over the best's, median of the per-round ratios (best of the tries);\n"
         "# noise: interquartile range over median of the best's samples\n");
  printf("# selector's choice within %.0f%% of the best algorithm at %zu of %zu sizes; wrong elements: %ld\n",
         o.tolerance * 100, points.size() - misses, points.size(), wrong);
  return misses + (wrong ? 1 : 0);
}

int reportCalibration(const Options& o, weftComm_t base, const std::vector<weft::tune::SweepPoint>& points) {
  long wrong = 0;
  const size_t nColumns = judgedColumns(o);
  printf("%12s %6s", "size", "iters");
  printNames(o, {});
  printf("\n");
  for (const auto& p : points) {
    printf("%12zu %6d", p.bytes, p.iters);
    for (size_t k = 0; k < nColumns; k++) printf(" %11.2f", p.medianUs[k]);
    printf("\n");
    for (long w : p.wrong) wrong += w;
  }
  if (wrong) {
    fprintf(stderr, "weft-tune: %ld wrong elements in the checked calls; nothing written\n", wrong);
    return 1;
  }
  const bool network = o.socket || base->costBase.nHosts > 1;
  weft::algo::CostInputs in = weft::tune::fitCostInputs(base->costBase, points, network);
  if (o.registered) {
    in.directMinBytes = weft::tune::directThreshold(points, weft::tune::calibratedAlgos().size());
    printf("# registered buffers: single-copy the fastest from %s\n",
           in.directMinBytes >= weft::tune::kDirectNever ? "no measured size (direct_min_bytes: never)"
                                                          : std::to_string(in.directMinBytes).c_str());
  }
  printf("# the file's curves are these medians smoothed over neighbouring sizes (tools/weft-tune/fit.h)\n");
  printf("# fitted: %s latency %.3f us/hop, bandwidth %.3f GB/s; curves for %d rank(s) on %d host(s)\n",
         network ? "network" : "shm", network ? in.inter.latencyUs : in.intra.latencyUs,
         network ? in.inter.bandwidthGBs : in.intra.bandwidthGBs, in.measuredRanks, in.measuredHosts);
  char comment[256];
  snprintf(comment, sizeof(comment), "measured by weft-tune: %d ranks on %d host(s) over %s, %d samples per point",
           in.nranks, in.nHosts, o.socket ? "sockets" : "shared memory", o.sweep.rounds);
  try {
    weft::saveTuneFile(o.out, in, comment);
  } catch (const std::exception& e) {
    fprintf(stderr, "weft-tune: %s\n", e.what());
    return 1;
  }
  printf("# wrote %s (load with WEFT_TUNE_FILE=%s)\n", o.out.c_str(), o.out.c_str());
  return 0;
}

// An algorithm that no protocol of this communicator can carry (oneshot
// needs the LL protocol: ranks on one host, shared memory allowed) is timed
// as the ring instead, so its curve ties with the ring's and never wins.
void forceRunnable(weftComm_t c, AlgoId a, int rank) {
  weft::algo::CostInputs in = c->costBase;
  in.bytes = 8;
  try {
    weft::algo::selectCall(Coll::AllReduce, in, c->algoFilter, c->geometry, c->protoFilter);
  } catch (const std::exception&) {
    if (rank == 0) printf("# %s cannot run on these ranks: timed as the ring\n", weft::algo::algoName(a));
    c->algoFilter = weft::algo::parseAlgoFilter("allreduce:ring");
  }
  if (c->ll) weft::refreshLowLatencyLimits(c);
}

// One rank's whole run. Returns the exit status (meaningful on rank 0).
int runRank(const Options& o, weftComm_t base, int rank, int nranks, const char* ranksAre) {
  std::vector<weftComm_t> timed;
  for (AlgoId a : weft::tune::calibratedAlgos()) {
    weftComm_t c = nullptr;
    if (!ok(weftCommSplit(base, 0, rank, &c, nullptr), "weftCommSplit")) return 1;
    c->algoFilter = weft::algo::parseAlgoFilter(std::string("allreduce:") + weft::algo::algoName(a));
    forceRunnable(c, a, rank);
    if (o.registered && c->direct) c->direct->setMinBytes(UINT64_MAX);  // the FIFO path, as named
    timed.push_back(c);
  }
  if (o.registered) {
    // The single-copy path at every size: without ll, which runs first.
    weftComm_t c = nullptr;
    if (!ok(weftCommSplit(base, 0, rank, &c, nullptr), "weftCommSplit")) return 1;
    if (!c->direct) {
      if (rank == 0)
        fprintf(stderr, "weft-tune: --registered: no single-copy path on these ranks (several hosts, WEFT_DIRECT=0 "
                        "or WEFT_SHM_DISABLE)\n");
      return 1;
    }
    c->protoFilter = weft::algo::parseProtoFilter("simple");
    if (c->ll) weft::refreshLowLatencyLimits(c);
    c->direct->setMinBytes(0);
    timed.push_back(c);
  }
  // A fourth communicator left to the selector: --check reports it; a
  // calibration times it too (and ignores it) so that both time the same
  // four communicators in the same rotation. With three in the rotation the
  // ring won 1 MB and 4 MB in four of five calibration runs (8 processes on
  // 2 cores), while all three checks with four found binarytree 9-21%
  // faster there.
  {
    weftComm_t c = nullptr;
    if (!ok(weftCommSplit(base, 0, rank, &c, nullptr), "weftCommSplit")) return 1;
    timed.push_back(c);
  }
  if (rank == 0) printHeader(o, base, ranksAre);
  int status = 0;
  try {
    auto points = weft::tune::sweepAllReduce(base, timed, rank, nranks, o.sweep);
    if (o.check) {
      std::vector<int> attempts;
      retimeMisses(o, base, timed, rank, nranks, &points, &attempts);
      if (rank == 0) status = reportCheck(o, timed, points, attempts) ? 1 : 0;
    } else if (rank == 0) {
      status = reportCalibration(o, base, points);
    }
  } catch (const std::exception& e) {
    fprintf(stderr, "weft-tune: rank %d: %s\n", rank, e.what());
    status = 1;
  }
  fflush(stdout);
  for (weftComm_t c : timed) weftCommDestroy(c);
  return status;
}

}  // namespace

// --merge: no ranks, only files.
int mergeFiles(const Options& o) {
  std::vector<weft::algo::CostInputs> runs;
  try {
    for (const std::string& f : o.merge) {
      weft::algo::CostInputs in;
      weft::loadTuneFile(f, &in);
      if (in.measuredRanks == 0) throw std::invalid_argument(f + " has no measured curves");
      runs.push_back(in);
    }
    weft::algo::CostInputs merged = weft::tune::mergeCalibrations(runs);
    std::string comment = "median of " + std::to_string(runs.size()) + " calibrations:";
    for (const std::string& f : o.merge) comment += " " + f;
    weft::saveTuneFile(o.out, merged, comment);
    printf("# merged %zu calibrations of %d rank(s) on %d host(s) into %s\n", runs.size(), merged.measuredRanks,
           merged.measuredHosts, o.out.c_str());
  } catch (const std::exception& e) {
    fprintf(stderr, "weft-tune: --merge: %s\n", e.what());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (!o.merge.empty()) return mergeFiles(o);
  if (!getenv("WEFT_SOCKET_IFNAME")) setenv("WEFT_SOCKET_IFNAME", "lo", 1);
  if (o.socket) setenv("WEFT_SHM_DISABLE", "1", 1);
  // A calibration measures the algorithms themselves, not an earlier file's choices.
  if (!o.check) unsetenv("WEFT_TUNE_FILE");

  std::string err;
  weft::bench::LaunchInfo launch = weft::bench::detectLaunch(getenv, false, &err);
  if (!err.empty()) {
    fprintf(stderr, "weft-tune: %s\n", err.c_str());
    return 2;
  }
  if (!launch.rankSource.empty() && launch.nProcs > 1) {
    if (o.threads) {
      fprintf(stderr, "weft-tune: -t and a launcher (%s) together: use one rank per process\n",
              launch.rankSource.c_str());
      return 2;
    }
    weftUniqueId id;
    weftComm_t base = nullptr;
    if (!getenv("WEFT_COMM_ID")) {
      fprintf(stderr, "weft-tune: launched as rank %d of %d but WEFT_COMM_ID is not set (benchmarks/weft-run sets it)\n",
              launch.procRank, launch.nProcs);
      return 2;
    }
    if (!ok(weftGetUniqueId(&id), "weftGetUniqueId") ||
        !ok(weftCommInitRank(&base, launch.nProcs, id, launch.procRank), "weftCommInitRank"))
      return 1;
    int status = runRank(o, base, launch.procRank, launch.nProcs, "processes");
    weftCommDestroy(base);
    return launch.procRank == 0 ? status : 0;
  }

  const int n = o.threads ? o.threads : 8;
  std::vector<weftComm_t> bases(n);
  if (!ok(weftCommInitAll(bases.data(), n, nullptr), "weftCommInitAll")) return 1;
  std::vector<int> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; r++) threads.emplace_back([&, r] { status[r] = runRank(o, bases[r], r, n, "threads"); });
  for (auto& t : threads) t.join();
  for (weftComm_t c : bases) weftCommDestroy(c);
  return status[0];
}
