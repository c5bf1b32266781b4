// The shared main() of every perf binary.
#pragma once

#include "benchmarks/common/collective.h"

namespace weft::bench {

// Parses the command line, creates the ranks (threads of this process, and
// the other processes of the launch), runs the sweep and prints it in
// nccl-tests' format. Returns the process exit status: non-zero on a usage
// error, a failed call, a timeout or any wrong element.
int benchMain(CollKind kind, int argc, char** argv);

}  // namespace weft::bench
