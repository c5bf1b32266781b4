#include "benchmarks/common/team.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace weft::bench {
namespace {

constexpr size_t kLineBytes = 256;

class WeftCrossProcess final : public CrossProcess {
 public:
  explicit WeftCrossProcess(weftComm_t leaders) : leaders_(leaders) {}
  ~WeftCrossProcess() override { weftCommDestroy(leaders_); }

  void allReduce(double* values, int n, Combine how) override {
    const weftRedOp_t op = how == Combine::Sum ? weftSum : how == Combine::Min ? weftMin : weftMax;
    check(weftAllReduce(values, values, static_cast<size_t>(n), weftFloat64, op, leaders_, nullptr));
  }

  void allGather(const void* mine, size_t bytes, void* all) override {
    check(weftAllGather(mine, all, bytes, weftUint8, leaders_, nullptr));
  }

 private:
  static void check(weftResult_t result) {
    if (result != weftSuccess) {
      throw std::runtime_error(std::string("combining results across processes failed: ") +
                               weftGetErrorString(result));
    }
  }
  weftComm_t leaders_;
};

}  // namespace

std::unique_ptr<CrossProcess> makeWeftCrossProcess(weftComm_t leaders) {
  return std::make_unique<WeftCrossProcess>(leaders);
}

Team::Team(int nThreads, int nProcs)
    : nThreads_(nThreads),
      nProcs_(nProcs),
      barrier_(nThreads),
      slots_(static_cast<size_t>(nThreads)),
      lineSlots_(static_cast<size_t>(nThreads) * kLineBytes) {}

std::vector<double> Team::allReduce(int tid, const std::vector<double>& values, Combine how) {
  slots_[static_cast<size_t>(tid)] = values;
  barrier();
  if (tid == 0) {
    combined_ = slots_[0];
    for (int t = 1; t < nThreads_; ++t) {
      for (size_t i = 0; i < combined_.size(); ++i) {
        const double v = slots_[static_cast<size_t>(t)][i];
        combined_[i] = how == Combine::Sum ? combined_[i] + v
                       : how == Combine::Min ? std::min(combined_[i], v) : std::max(combined_[i], v);
      }
    }
    if (nProcs_ > 1) cross_->allReduce(combined_.data(), static_cast<int>(combined_.size()), how);
  }
  barrier();
  std::vector<double> result = combined_;
  barrier();  // nobody may overwrite combined_ before everyone has read it
  return result;
}

std::vector<std::string> Team::allGatherLines(int tid, const std::string& line) {
  char* slot = lineSlots_.data() + static_cast<size_t>(tid) * kLineBytes;
  std::memset(slot, 0, kLineBytes);
  std::memcpy(slot, line.data(), std::min(line.size(), kLineBytes - 1));
  barrier();
  if (tid == 0) {
    allLines_.assign(lineSlots_.size() * static_cast<size_t>(nProcs_), 0);
    if (nProcs_ > 1) {
      cross_->allGather(lineSlots_.data(), lineSlots_.size(), allLines_.data());
    } else {
      allLines_ = lineSlots_;
    }
  }
  barrier();
  std::vector<std::string> lines;
  for (size_t i = 0; i < allLines_.size(); i += kLineBytes) lines.emplace_back(allLines_.data() + i);
  barrier();
  return lines;
}

}  // namespace weft::bench
