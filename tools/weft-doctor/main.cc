// weft-doctor: checks a cluster from every rank of a job and compares it
// with a stored baseline (docs/doctor.md). Launched like the perf binaries:
// weft-run, mpirun, Slurm or torchrun start one rank per process, -t N
// makes N ranks as threads of each process.
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/common/launch.h"
#include "benchmarks/common/team.h"
#include "src/util/settings.h"
#include "tools/weft-doctor/output.h"
#include "tools/weft-doctor/probe.h"
#include "weft/weft.h"

namespace {

using weft::doctor::Options;

[[noreturn]] void fatal(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "weft-doctor: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(4);
}

// Ends the process when the whole run takes longer than --timeout: a hung
// host must not hang a cron job.
class Watchdog {
 public:
  explicit Watchdog(double seconds) {
    thread_ = std::thread([this, seconds] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (!stop_.load()) {
        if (std::chrono::steady_clock::now() > deadline)
          fatal("the run took longer than --timeout " + std::to_string(int(seconds)) + " s; stopped. Ranks here:\n" +
                weft::doctor::currentPhases());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

int runRanks(const Options& o, const weft::bench::LaunchInfo& launch, const weftUniqueId& id) {
  const int nranks = launch.nProcs * o.threads;
  std::vector<int> status(size_t(o.threads), 0);
  std::vector<std::thread> threads;
  // No thread rank destroys its communicator while another is still in its
  // last call: the tail of a call (releasing the last slot) rings the
  // peer's doorbell, which a same-process peer's destroy frees. (Ranks in
  // other processes keep their own mappings.)
  std::barrier<> done(o.threads);
  for (int t = 0; t < o.threads; t++) {
    threads.emplace_back([&, t] {
      const int rank = launch.procRank * o.threads + t;
      weftComm_t comm = nullptr;
      try {
        weftResult_t res = weftCommInitRank(&comm, nranks, id, rank);
        if (res != weftSuccess)
          throw std::runtime_error(std::string("weftCommInitRank failed: ") + weftGetErrorString(res) + ": " +
                                   weftGetLastError(nullptr));
        status[size_t(t)] = weft::doctor::runRank(o, comm);
        done.arrive_and_wait();
        weftCommDestroy(comm);
      } catch (const std::exception& e) {
        fatal("rank " + std::to_string(rank) + ": " + e.what());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  int worst = 0;
  for (int s : status) worst = std::max(worst, s);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  const weft::doctor::ParsedOptions parsed = weft::doctor::parseOptions(argc, argv);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "weft-doctor: %s\n%s", parsed.error.c_str(), weft::doctor::usageText().c_str());
    return weft::doctor::kExitUsage;
  }
  const Options& o = parsed.options;
  if (o.help) {
    std::fputs(weft::doctor::usageText().c_str(), stdout);
    return 0;
  }
  std::string launchError;
  const weft::bench::LaunchInfo launch = weft::bench::detectLaunch(std::getenv, weft::bench::mpiAvailable(), &launchError);
  if (!launchError.empty()) {
    std::fprintf(stderr, "weft-doctor: %s\n", launchError.c_str());
    return weft::doctor::kExitUsage;
  }
  if (launch.nProcs > 1 && !launch.mpi && !weft::settings::get(weft::settings::kCommId)) {
    std::fprintf(stderr,
                 "weft-doctor: launched as %d processes (%s) without MPI: set WEFT_COMM_ID=<ip>:<port> of rank 0 "
                 "(benchmarks/weft-run does)\n",
                 launch.nProcs, launch.rankSource.c_str());
    return weft::doctor::kExitUsage;
  }
  if (launch.mpi) weft::bench::mpiInit(&argc, &argv);
  weftUniqueId id;
  // As the perf binaries: one process makes the id; MPI jobs broadcast
  // rank 0's; other launchers give every process WEFT_COMM_ID.
  if (!launch.mpi || launch.procRank == 0)
    if (weftGetUniqueId(&id) != weftSuccess) fatal(std::string("weftGetUniqueId failed: ") + weftGetLastError(nullptr));
  if (launch.mpi) weft::bench::mpiBroadcastBytes(&id, sizeof id, 0);
  int status;
  {
    Watchdog watchdog(o.timeoutSec);
    status = runRanks(o, launch, id);
  }
  if (launch.mpi) weft::bench::mpiFinalize();
  return status;
}
