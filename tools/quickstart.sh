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
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
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
