#!/usr/bin/env bash
# Packs what the GPU gate runs out of a CUDA-enabled build folder into a small
# tree (debug info stripped, the shared libraries it needs beside it) that can
# travel to a GPU machine with no compiler set-up; the gate runs it with
#   tests/gpu/run_gpu_checks.sh <packed-dir>
# (a packed tree carries a PREBUILT marker, so the gate skips its build).
# Usage: tests/gpu/pack_prebuilt.sh <cuda-build-dir> <out-dir>
set -eu -o pipefail
build="$(cd "$1" && pwd)"
out="$2"
rm -rf "$out"
mkdir -p "$out/lib"
files=(tests/gpu/gpu_test tests/gpu/gpu_compress_test tests/gpu/gpu_sweep tests/gpu/gpu_ib_test
       tests/gpu/nccl_side_by_side tests/devhost/launch_policy_test tests/devhost/call_memory_test all_reduce_perf)
for f in "${files[@]}"; do
  [[ -x "$build/$f" ]] || { echo "pack_prebuilt: $build/$f is missing (build it first)" >&2; exit 1; }
  mkdir -p "$out/$(dirname "$f")"
  strip --strip-debug -o "$out/$f" "$build/$f"
done
strip --strip-debug -o "$out/libweft.so.0" "$(readlink -f "$build/libweft.so.0")"
mkdir -p "$out/bindings/nccl"
strip --strip-debug -o "$out/bindings/nccl/libnccl.so.2" "$(readlink -f "$build/bindings/nccl/libnccl.so.2")"
# The system libraries the binaries link that a bare CUDA image may lack.
for lib in libhwloc.so.15 libudev.so.1; do
  path=$(ldd "$build/libweft.so.0" | awk -v l="$lib" '$1 == l { print $3 }')
  [[ -n "$path" ]] && cp -L "$path" "$out/lib/$lib"
done
git -C "$(dirname "$0")" rev-parse HEAD > "$out/PREBUILT"
du -sh "$out"
