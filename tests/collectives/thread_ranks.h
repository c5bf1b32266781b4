// Ranks as threads of the test process (weftCommInitAll), each calling the
// API from its own thread like a framework's per-rank thread would.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

class ThreadRanks {
 public:
  explicit ThreadRanks(int n) : comms_(n, nullptr) {
    status_ = weftCommInitAll(comms_.data(), n, nullptr);
  }
  ~ThreadRanks() {
    if (status_ != weftSuccess) return;
    // Destroy in parallel: each rank's destroy is independent.
    std::vector<std::thread> t;
    for (weftComm_t c : comms_) t.emplace_back([c] { weftCommDestroy(c); });
    for (auto& th : t) th.join();
  }
  weftResult_t status() const { return status_; }
  int size() const { return static_cast<int>(comms_.size()); }
  weftComm_t comm(int r) const { return comms_[r]; }

  // Runs fn(rank) on one thread per rank; returns the concatenated non-empty
  // results.
  std::string run(const std::function<std::string(int)>& fn) {
    std::vector<std::string> out(comms_.size());
    std::vector<std::thread> t;
    for (int r = 0; r < size(); r++) t.emplace_back([&, r] { out[r] = fn(r); });
    for (auto& th : t) th.join();
    std::string all;
    for (auto& s : out) all += s;
    return all;
  }

 private:
  std::vector<weftComm_t> comms_;
  weftResult_t status_;
};

}  // namespace weft::test
