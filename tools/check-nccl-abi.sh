#!/usr/bin/env bash
# check-nccl-abi.sh NCCL_TESTS_SOURCE_DIR [--nvidia-header] [--run] [--mpi]
#
# Builds a checkout of NVIDIA's nccl-tests against weft's NCCL-compatible
# library (bindings/nccl: nccl.h + libnccl.so.2) to check that the API and
# ABI are what nccl-tests expects. The checkout is not modified: it is copied
# and built in $OUT_DIR (default: build-nccl-abi/ in the weft tree).
#
#   --nvidia-header  compile against NVIDIA's own nccl.h ($CUDA_HOME/include,
#           2.28.9 with CUDA 13.0; its nccl_device.h comes with it) instead of
#           weft's, as a program built for real NCCL is, and link and load
#           the binaries against weft's libnccl.so.2: every symbol they import
#           must resolve. Weak imports weft lacks would be listed, not
#           failed: nccl-tests declares its device-API calls
#           (ncclDevCommCreate/Destroy, nccl_device.h) weak and calls them
#           only with -D; weft exports both, failing with ncclInvalidUsage.
#   --mpi   build nccl-tests with MPI (MPI=1, OpenMPI from Debian), which is
#           what runs 2 ranks on a single GPU (NCCL_TESTS_DEVICE=0).
#   --run   also run all_reduce_perf on the GPUs present and require
#           "#wrong" = 0 (needs a GPU): with --mpi, 2 ranks on GPU 0;
#           otherwise one process driving every GPU (-g N, N >= 2).
#
# Environment: CUDA_HOME (/usr/local/cuda), NVCC_GENCODE (default: one
# arch, sm_90, to keep the build short), WEFT_BUILD_DIR (where libnccl.so.2
# is built; default $OUT_DIR/weft), WEFT_NCCL_LIB_DIR (a directory already
# holding weft's libnccl.so*: nothing is built), JOBS (make -j, default nproc).
set -euo pipefail

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
src=$(cd "$1" && pwd) || usage
shift
run=0 mpi=0 nvidia=0
for a in "$@"; do
  case "$a" in
    --run) run=1 ;;
    --mpi) mpi=1 ;;
    --nvidia-header) nvidia=1 ;;
    *) usage ;;
  esac
done
[ -f "$src/src/common.h" ] && [ -f "$src/src/Makefile" ] || { echo "check-nccl-abi: $src is not an nccl-tests checkout" >&2; exit 2; }

weft_root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT_DIR:-$weft_root/build-nccl-abi}
weft_build=${WEFT_BUILD_DIR:-$out/weft}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc)}
gencode=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
[ -x "$cuda_home/bin/nvcc" ] || { echo "check-nccl-abi: no nvcc in $cuda_home (set CUDA_HOME)" >&2; exit 2; }
mkdir -p "$out"

if [ -n "${WEFT_NCCL_LIB_DIR:-}" ]; then
  lib_dir=$WEFT_NCCL_LIB_DIR
  [ -f "$lib_dir/libnccl.so.2" ] || { echo "check-nccl-abi: no libnccl.so.2 in $lib_dir" >&2; exit 2; }
else
  echo "== building libnccl.so.2 from weft in $weft_build"
  cmake -S "$weft_root" -B "$weft_build" -DWEFT_BUILD_NCCL_COMPAT=ON -DWEFT_BUILD_TORCH=OFF -DWEFT_BUILD_TESTS=OFF \
    -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_TOOLS=OFF ${WEFT_CMAKE_ARGS:-} >"$out/weft-configure.log"
  cmake --build "$weft_build" --target weft_nccl -j"$jobs" >"$out/weft-build.log" || { tail -30 "$out/weft-build.log"; exit 1; }
  lib_dir=$weft_build/bindings/nccl
fi

# An NCCL_HOME laid out as nccl-tests expects: include/nccl.h, lib/libnccl.so.
home=$out/nccl-home
rm -rf "$home" && mkdir -p "$home/include" "$home/lib"
if [ "$nvidia" = 1 ]; then
  header=$cuda_home/include/nccl.h
  [ -f "$header" ] && ! grep -q WEFT_NCCL_API "$header" || { echo "check-nccl-abi: no NVIDIA nccl.h in $cuda_home/include" >&2; exit 2; }
  echo "== compiling against NVIDIA's $header (NCCL_VERSION_CODE $(sed -n 's/^#define NCCL_VERSION_CODE *//p' "$header"))"
  cp "$header" "$home/include/"
else
  cp "$weft_root/bindings/nccl/nccl.h" "$home/include/"
fi
cp -P "$lib_dir"/libnccl.so* "$home/lib/"

echo "== building nccl-tests from $src"
tests=$out/nccl-tests
rm -rf "$tests" && mkdir -p "$tests"
cp -r "$src"/. "$tests/"
# Our library's directory goes first on the link line: CUDA's lib directory
# may hold NVIDIA's own libnccl.so (pip-style CUDA installs do), and the link
# must resolve every NCCL symbol against weft's library, not that one.
make_args=(CUDA_HOME="$cuda_home" NCCL_HOME="$home" NVCC_GENCODE="$gencode" BUILDDIR="$tests/build"
           CUDA_LIB="$home/lib -L$cuda_home/lib64")
# Likewise "nccl.h" must be ours, not one in CUDA's include directory.
echo '#include "nccl.h"' >"$out/probe.cu"
"$cuda_home/bin/nvcc" -I"$home/include" -E "$out/probe.cu" -o "$out/probe.i"
used=$(grep -m1 -o '"[^"]*nccl\.h"' "$out/probe.i" | tr -d '"')
[ "$used" = "$home/include/nccl.h" ] || { echo "check-nccl-abi: nvcc picks $used, not $home/include/nccl.h"; exit 1; }
if [ "$mpi" = 1 ]; then
  mpi_home=${MPI_HOME:-/usr/lib/x86_64-linux-gnu/openmpi}
  make_args+=(MPI=1 MPI_HOME="$mpi_home")
fi
if ! make -C "$tests/src" -j"$jobs" "${make_args[@]}" >"$out/nccl-tests-build.log" 2>&1; then
  grep -E "error|Error" "$out/nccl-tests-build.log" | head -30
  echo "check-nccl-abi: FAILED to build nccl-tests against weft's nccl.h (log: $out/nccl-tests-build.log)"
  exit 1
fi
bins=$(ls "$tests"/build/*_perf)
weak_absent="" imports=0
for b in $bins; do
  LD_LIBRARY_PATH="$home/lib" ldd "$b" | grep "libnccl.so.2 => $home/lib/libnccl.so.2" >/dev/null || \
    { echo "check-nccl-abi: $b does not resolve libnccl.so.2 to weft's"; exit 1; }
  # Every NCCL symbol the binary needs must be exported by weft's library;
  # a weak import (nccl-tests' device-API calls, used only with -D) may be absent.
  exported=$(nm -D --defined-only "$home/lib/libnccl.so.2" | awk '{print $3}' | sort -u)
  missing=$(comm -23 <(nm -D --undefined-only "$b" | awk '$1 == "U" {print $2}' | grep -E '^p?nccl' | sed 's/@.*//' | sort -u) \
                     <(echo "$exported"))
  [ -z "$missing" ] || { echo "check-nccl-abi: $(basename "$b") needs symbols weft lacks: $missing"; exit 1; }
  weak=$(comm -23 <(nm -D --undefined-only "$b" | awk '$1 == "w" {print $2}' | grep -E '^p?nccl' | sed 's/@.*//' | sort -u) \
                  <(echo "$exported") | tr '\n' ' ')
  [ -z "$weak" ] || weak_absent="$weak_absent $(basename "$b"): $weak"
  imports=$((imports + $(nm -D --undefined-only "$b" | awk '{print $2}' | grep -cE '^p?nccl' || true)))
  # The dynamic linker's own view: every relocation of the binary resolves.
  if LD_LIBRARY_PATH="$home/lib" ldd -r "$b" 2>&1 | grep -E 'undefined symbol: p?nccl' >"$out/ldd-r.txt"; then
    echo "check-nccl-abi: $(basename "$b"): ldd -r: $(cat "$out/ldd-r.txt")"; exit 1
  fi
done
[ -z "$weak_absent" ] || echo "   weak imports weft does not export (used only by nccl-tests -D, NCCL's device API):$weak_absent"
which=weft; [ "$nvidia" = 1 ] && which=NVIDIA
echo "== built $(echo "$bins" | wc -w) nccl-tests binaries against $which's nccl.h and weft's libnccl.so.2 ($imports NCCL imports; all resolved)"
echo "   run them with LD_LIBRARY_PATH=$home/lib (before any other libnccl.so.2)"

[ "$run" = 1 ] || exit 0
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$ngpus" -ge 1 ] || { echo "check-nccl-abi: --run needs a GPU (nvidia-smi found none)"; exit 1; }
export LD_LIBRARY_PATH="$home/lib:${LD_LIBRARY_PATH:-}" WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo}
log=$out/all_reduce_perf.log
if [ "$mpi" = 1 ]; then
  echo "== all_reduce_perf, 2 ranks (MPI processes) on GPU 0"
  mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH -x WEFT_SOCKET_IFNAME -x NCCL_TESTS_DEVICE=0 \
    "$tests/build/all_reduce_perf" -b 8 -e 64M -f 4 -c 1 | tee "$log"
elif [ "$ngpus" -ge 2 ]; then
  echo "== all_reduce_perf, $ngpus ranks (one process, -g $ngpus)"
  "$tests/build/all_reduce_perf" -b 8 -e 64M -f 4 -c 1 -g "$ngpus" | tee "$log"
else
  echo "check-nccl-abi: one GPU: use --mpi to run 2 ranks on it"; exit 1
fi
grep -q "Out of bounds values : 0 OK" "$log" || { echo "check-nccl-abi: all_reduce_perf reported wrong values"; exit 1; }
echo "== all_reduce_perf: #wrong = 0 on every size"
