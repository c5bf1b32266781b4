// broadcast_perf: nccl-tests-compatible benchmark of weft's Broadcast.
#include "benchmarks/common/harness.h"

int main(int argc, char** argv) { return weft::bench::benchMain(weft::bench::CollKind::Broadcast, argc, argv); }
