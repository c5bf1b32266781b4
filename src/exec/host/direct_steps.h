// The host executor's Direct and Barrier steps (plan::StepKind): arithmetic
// straight between ranks' buffers, as mapped in this process
// (DirectAccess), for single-copy plans (algorithms/direct.h).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/plan.h"
#include "src/exec/host/host_executor.h"
#include "src/kernels/reduce.h"

namespace weft {

class DirectSteps {
 public:
  DirectSteps(DirectAccess& access, const kernels::RedOp& op, uint32_t elemSize, int rank)
      : access_(access), op_(op), elem_(elemSize), rank_(rank) {}

  // Runs steps[i] and returns the index of the next step to run; adds the
  // bytes it wrote to *moved. With `stream` (HostExecContext::streamStores)
  // a Direct step runs together with the steps right after it that
  // accumulate into the same range and the plain copies of that range (a
  // share's result going to every rank's output): block by block through
  // an L1-sized buffer, each block written to every output once with
  // streaming stores, no output read back. Same arithmetic, same order.
  size_t run(const std::vector<plan::Step>& steps, size_t i, bool stream, uint64_t* moved);

 private:
  char* at(int rank, plan::Buf b, uint64_t off, const plan::Step& st) const;
  void compute(char* dst, const char* a, const char* b, uint64_t count, uint8_t flags, bool accumulate);
  void runOne(const plan::Step& st);
  size_t runGroup(const std::vector<plan::Step>& steps, size_t first);
  void streamGroup(const std::vector<plan::Step>& steps, size_t first, size_t copies, char* const* outs, int nOut);

  DirectAccess& access_;
  const kernels::RedOp& op_;
  const uint32_t elem_;
  const int rank_;
};

}  // namespace weft
