// alltoall_perf: nccl-tests-compatible benchmark of weft's AlltoAll.
#include "benchmarks/common/harness.h"

int main(int argc, char** argv) { return weft::bench::benchMain(weft::bench::CollKind::AllToAll, argc, argv); }
