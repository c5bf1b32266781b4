// The ranks of one process (threads) and the way their results are combined
// with the other processes' (MPI, or a communicator of one leader per process).
#pragma once

#include <barrier>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::bench {

enum class Combine { Sum, Min, Max };

// Combines values across processes. Called by one thread per process (the
// leader), in the same order on every process.
class CrossProcess {
 public:
  virtual ~CrossProcess() = default;
  virtual void allReduce(double* values, int n, Combine how) = 0;
  // Every process contributes `bytes`; `all` receives nProcs * bytes in process order.
  virtual void allGather(const void* mine, size_t bytes, void* all) = 0;
};

// Uses a weft communicator whose ranks are the leaders of each process.
std::unique_ptr<CrossProcess> makeWeftCrossProcess(weftComm_t leaders);
// Uses MPI_COMM_WORLD; null when the binary was built without MPI.
std::unique_ptr<CrossProcess> makeMpiCrossProcess();
bool mpiAvailable();
// MPI set-up and tear-down (no-ops without MPI).
void mpiInit(int* argc, char*** argv);
void mpiFinalize();
void mpiBroadcastBytes(void* data, size_t bytes, int root);

class Team {
 public:
  Team(int nThreads, int nProcs);
  // Set by the leader before the first combining call when nProcs > 1.
  void setCrossProcess(std::unique_ptr<CrossProcess> cross) { cross_ = std::move(cross); }
  void barrier() { barrier_.arrive_and_wait(); }
  // Every thread of the process calls these, in the same order.
  std::vector<double> allReduce(int tid, const std::vector<double>& values, Combine how);
  // Lines of every rank in rank order (process-major). Each line is cut at 255 bytes.
  std::vector<std::string> allGatherLines(int tid, const std::string& line);

 private:
  int nThreads_;
  int nProcs_;
  std::barrier<> barrier_;
  std::unique_ptr<CrossProcess> cross_;
  std::vector<std::vector<double>> slots_;
  std::vector<double> combined_;
  std::vector<char> lineSlots_;
  std::vector<char> allLines_;
};

}  // namespace weft::bench
