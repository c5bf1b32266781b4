// reduce_scatter_perf: nccl-tests-compatible benchmark of weft's ReduceScatter.
#include "benchmarks/common/harness.h"

int main(int argc, char** argv) { return weft::bench::benchMain(weft::bench::CollKind::ReduceScatter, argc, argv); }
