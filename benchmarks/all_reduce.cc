// all_reduce_perf: nccl-tests-compatible benchmark of weft's AllReduce.
#include "benchmarks/common/harness.h"

int main(int argc, char** argv) { return weft::bench::benchMain(weft::bench::CollKind::AllReduce, argc, argv); }
