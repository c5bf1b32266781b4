#!/usr/bin/env bash
# Builds weft with a sanitizer in its own build folder and runs tests there.
#
#   tools/sanitize.sh asan [--no-build] [ctest args...]
#       AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) in
#       build-asan/, then the whole ctest suite less the labels `long`
#       (the rest of the rank-count sweeps) and `gpu`.
#   tools/sanitize.sh tsan [--no-build] [ctest args...]
#       ThreadSanitizer in build-tsan/, then the tests where threads meet:
#       thread ranks, process ranks, bootstrap, socket and the loopback
#       verbs provider (the selection is TSAN_TESTS below).
#   --no-build: run the tests of the existing build; --no-test: build only.
#
# Extra arguments go to ctest after the script's own selection (e.g.
# `-R Socket` to narrow it). Every process writes its reports to
# <build>/sanitizer-logs/<kind>.<pid>; the script exits 1 when ctest fails
# or when any report file exists, even one from a child process whose exit
# status a test did not look at. Suppressions, each with its reason, are in
# tools/sanitizers/.
#
# CUDA is off in these builds: nvcc's device code cannot be instrumented,
# and the CUDA runtime maps memory in the range ASan keeps as shadow. The
# PyTorch backend is off too: a Python interpreter cannot load an
# ASan-instrumented extension without preloading the runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
kind=${1:-}
shift || true
build=1
run=1
case "${1:-}" in
  --no-build) build=0; shift ;;
  --no-test) run=0; shift ;;
esac

case "$kind" in
  asan)
    flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    ;;
  tsan)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    ;;
  *)
    echo "usage: $0 asan|tsan [--no-build] [ctest args...]" >&2
    exit 2
    ;;
esac
dir=build-$kind
jobs=${SANITIZE_JOBS:-$(nproc)}
export WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo}

# The options are in force while building too: gtest_discover_tests runs
# every test binary to list its cases.
logs=$root/$dir/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
supp=$root/tools/sanitizers
common="print_stacktrace=1:halt_on_error=1:log_path=$logs/$kind"
case "$kind" in
  asan)
    export ASAN_OPTIONS="$common:detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0:suppressions=$supp/asan.supp"
    export LSAN_OPTIONS="print_suppressions=0:suppressions=$supp/lsan.supp"
    export UBSAN_OPTIONS="$common:suppressions=$supp/ubsan.supp:log_path=$logs/ubsan"
    # hwloc's pci plugin has libpciaccess name the PCI devices from pci.ids;
    # libpciaccess keeps those names in a global cache it never frees, and
    # hwloc unloads the plugin (libpciaccess with it) when the last topology
    # is destroyed: LeakSanitizer then reports the cache (1016 bytes in 9
    # allocations) from an unloaded module, which no suppression can match
    # (the fast unwinder stops in it). Without the plugin hwloc's Linux
    # backend finds the same PCI tree from sysfs, less the model names.
    export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--pci}
    # Every test's own TIMEOUT x3 (cmake/TestTimeoutScale.cmake; ctest's
    # --timeout below only covers tests without one): the rank-count sweeps
    # reached their 300 s under ASan on a loaded machine.
    export WEFT_TEST_TIMEOUT_SCALE=${WEFT_TEST_TIMEOUT_SCALE:-3}
    # Install.*: installs this instrumented library and links a consumer
    # built without -fsanitize against it, which cannot resolve the
    # sanitizer runtime's symbols (a property of that test, not of weft).
    selection=(-LE "long|gpu" -E "^Install\.")
    ;;
  tsan)
    export TSAN_OPTIONS="$common:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    # ThreadSanitizer slows ranks 5 to 15 times: the process-rank harness
    # (tests/process/process_ranks.cc) multiplies its kill deadline by this,
    # so a healthy run is not cut off. Bounds the tests check themselves
    # (an error within N ms) are not scaled.
    export PROCESS_RANKS_DEADLINE_SCALE=${PROCESS_RANKS_DEADLINE_SCALE:-4}
    # And ctest's per-test TIMEOUTs by as much (cmake/TestTimeoutScale.cmake).
    export WEFT_TEST_TIMEOUT_SCALE=${WEFT_TEST_TIMEOUT_SCALE:-4}
    # The tests where several threads or processes of weft meet: thread
    # ranks (ThreadCollectives, AlgorithmCollectives), process ranks
    # (ProcessCollectives, ProcessFaults, KilledRank*, the ll protocol's
    # LowLatency*), the bootstrap and its handshake, the socket transport,
    # and every ibloop test (the IB transport's proxy threads over the
    # loopback provider: Ibloop*, Provider*), and the CUDA interpreter
    # compiled for the host (DevEmu*: CTA threads and emulated ranks over
    # in-memory FIFOs; alone: SANITIZE_TARGETS=devemu_test tools/sanitize.sh
    # tsan -R DevEmu), the registration tests (thread ranks on registered
    # buffers: the single-copy path) and the host task queue (the host
    # stream's worker and its callers).
    TSAN_TESTS='Thread|AlgorithmCollectives|Process|KilledRank|LowLatency|Bootstrap|Handshake|StreamMac|Socket|DevEmu|Registration|HostTaskQueue'
    selection=(-R "$TSAN_TESTS|Ibloop|Provider" -LE "long|gpu")
    ;;
esac

if [ "$build" = 1 ]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # -O1: fast enough to run the suite, and stacks keep their frames.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    -DCMAKE_MODULE_LINKER_FLAGS="$flags" \
    -DWEFT_ENABLE_CUDA=OFF -DWEFT_BUILD_TORCH=OFF
  # SANITIZE_TARGETS="a b c" builds only those targets (on a small machine
  # a whole sanitizer build takes long); pass a matching ctest -R then, as
  # tests of binaries not built fail as *_NOT_BUILT.
  targets=()
  for t in ${SANITIZE_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$dir" -j"$jobs" "${targets[@]}"
fi
[ "$run" = 1 ] || exit 0

start=$(date +%s)
rc=0
ctest --test-dir "$dir" -j"$jobs" --output-on-failure --timeout 600 "${selection[@]}" "$@" || rc=$?
end=$(date +%s)
echo "sanitize.sh $kind: ctest exit $rc, $((end - start)) s"

reports=$(find "$logs" -type f -size +0 | sort)
# UBSan inside ASan's runtime (GCC 12) ignores log_path and prints its
# reports to stderr: they are looked for in ctest's log of every test's
# output too (a child process whose stderr a test discards is missed).
ubsanLines=$(grep -h "runtime error:" "$dir/Testing/Temporary/LastTest.log" 2>/dev/null | sort | uniq -c || true)
if [ -n "$ubsanLines" ]; then
  echo "sanitize.sh $kind: UBSan reports in the tests' output (count, report):"
  echo "$ubsanLines"
  rc=1
fi
if [ -n "$reports" ]; then
  echo "sanitize.sh $kind: $(echo "$reports" | wc -l) report file(s):"
  for f in $reports; do
    echo "==== $f"
    head -n 60 "$f"
  done
  exit 1
fi
[ -z "$ubsanLines" ] && echo "sanitize.sh $kind: no sanitizer report"
exit "$rc"
