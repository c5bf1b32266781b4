// all_gather_perf: nccl-tests-compatible benchmark of weft's AllGather.
#include "benchmarks/common/harness.h"

int main(int argc, char** argv) { return weft::bench::benchMain(weft::bench::CollKind::AllGather, argc, argv); }
