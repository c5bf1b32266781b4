#!/usr/bin/env bash
# The two README commands:
#   tools/quickstart.sh perf   install, build, run an AllReduce perf sweep on 4 local ranks
#   tools/quickstart.sh test   install, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-perf}
bash tools/setup.sh
jobs=$(nproc)
# Everything here runs on this one machine: keep bootstrap and socket
# traffic on loopback (the library's default interface is the first
# non-loopback one, as on a cluster).
export WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo}
# Line tables only (-g1): enough for the stack traces the tests print, and
# a third less compile time than full debug information. The CUDA kernel is
# built for the visible GPU, or where there is none (CI) only for the device
# machines' architecture (sm_90) to check that it compiles; a plain cmake
# configure builds 80;90 (WEFT_CUDA_ARCHS).
cuda_archs=90
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  cuda_archs=native
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DWEFT_CUDA_ARCHS=$cuda_archs"
cmake --build build -j"$jobs"
case "$mode" in
  perf)
    ./build/all_reduce_perf -t 4 -b 8 -e 64M -f 4 -n 20 -w 5
    ;;
  test)
    # Tests open sockets on loopback only; each has its own time bound.
    # The `long` label (the rest of the rank-count sweeps) stays out of this
    # run: `ctest --test-dir build -L long` runs it.
    ctest --test-dir build -j"$jobs" --output-on-failure --timeout 600 -LE long
    ;;
  *)
    echo "usage: $0 perf|test" >&2
    exit 2
    ;;
esac
