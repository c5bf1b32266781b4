#!/usr/bin/env bash
# Coverage-guided fuzzing of weft's parsers with libFuzzer
# (docs/reliability.md#fuzzers).
#
#   tools/fuzz.sh [target...] [-runs=N] [-max_total_time=S] [other libFuzzer flags]
#
# Builds the targets of tests/fuzz/ with clang -fsanitize=fuzzer,address,
# undefined in build-fuzz/ (git-ignored; WEFT_FUZZ_BUILD_DIR overrides), then
# runs each (all when none is named) from a copy of its seed corpus for
# -runs executions (default 1000000), or until -max_total_time seconds pass
# when that is given. New inputs land in build-fuzz/corpus/<target>/,
# crashes in build-fuzz/crashes/<target>/; a summary line per target gives
# executions, seconds and the result. Exit status: 1 when any target
# crashed, leaked, hit UB or timed out.
#
# Needs clang 18 or later (the kernels use floating-point template
# arguments) and its libFuzzer runtime: Debian 12 has clang-19 and
# libclang-rt-19-dev, installed here when missing, never by tools/setup.sh
# (the CI smoke is the gcc replay build, `ctest -L fuzz`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${WEFT_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
ALL_TARGETS=(unique_id bootstrap_wire root_reply handshake conninfo_ib conninfo_socket conninfo_shm conninfo_p2p
             topo_file tune_file settings peer_info ib_facts ib_discovery lbv_settings bench_flags bootstrap_root bootstrap_reader socket_pump)

targets=()
flags=()
runs="-runs=1000000"
for a in "$@"; do
  case "$a" in
    -runs=*) runs="$a" ;;
    -*) flags+=("$a") ;;
    *) targets+=("$a") ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")
# A time bound replaces the execution count unless both are given.
for f in "${flags[@]+"${flags[@]}"}"; do
  case "$f" in -max_total_time=*) [[ " $* " == *" -runs="* ]] || runs="-runs=-1" ;; esac
done

find_clang() {
  for c in clang++-19 clang++-20 clang++-18; do
    if command -v "$c" >/dev/null; then
      local rt
      rt="$("$c" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)"
      [ -f "$rt" ] || rt="$(dirname "$("$c" -print-libgcc-file-name --rtlib=compiler-rt 2>/dev/null)")/libclang_rt.fuzzer-x86_64.a"
      if [ -f "$rt" ]; then echo "$c"; return 0; fi
    fi
  done
  return 1
}

CXX_BIN="$(find_clang || true)"
if [ -z "$CXX_BIN" ]; then
  echo "fuzz.sh: installing clang and the libFuzzer runtime (clang-19 libclang-rt-19-dev)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get install -y --no-install-recommends clang-19 libclang-rt-19-dev >&2
  CXX_BIN="$(find_clang)" || { echo "fuzz.sh: no clang with libFuzzer found" >&2; exit 2; }
fi
CC_BIN="${CXX_BIN/clang++/clang}"
# A build dir configured with another compiler starts afresh.
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "CMAKE_CXX_COMPILER:.*=.*$CXX_BIN\$" "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD"
fi

SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN" \
    -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DWEFT_ENABLE_CUDA=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_BUILD_NCCL_COMPAT=OFF -DWEFT_BUILD_TORCH=OFF \
    -DWEFT_FUZZ_LIBFUZZER=ON >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log" >&2; exit 2; }
fi
cmake --build "$BUILD" -j"${WEFT_FUZZ_JOBS:-2}" --target "${targets[@]/#/fuzz_}"

export WEFT_SOCKET_IFNAME="${WEFT_SOCKET_IFNAME:-lo}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for t in "${targets[@]}"; do
  work="$BUILD/corpus/$t"; crashes="$BUILD/crashes/$t"; log="$BUILD/logs/$t.log"
  mkdir -p "$work" "$crashes" "$(dirname "$log")"
  start=$(date +%s)
  rc=0
  "$BUILD/tests/fuzz/fuzz_$t" "$runs" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "${flags[@]+"${flags[@]}"}" "$work" "$ROOT/tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if [ "$rc" -eq 0 ]; then result="ok"; else result="FAILED (rc $rc, see $log; inputs in $crashes)"; status=1; fi
  printf '%-18s %12s execs %6s s  %s\n' "$t" "$execs" "$secs" "$result"
done
exit $status
