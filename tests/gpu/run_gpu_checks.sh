#!/usr/bin/env bash
# GPU checks for the CUDA device path, for a machine with a GPU:
#   1. configure and build with WEFT_ENABLE_CUDA=ON (architectures from
#      WEFT_CUDA_ARCHS, default: the visible GPU's),
#   2. run the GPU GoogleTests (tests/gpu),
#   3. run the device AllReduce over IB between two processes, with GPUDirect
#      RDMA and staged (gpu_ib_test; each case skips, saying why, without an
#      ACTIVE IB/RoCE port or without GPUDirect RDMA support),
#   4. run the perf sweep + reduce-kernel micro-benchmark (gpu_sweep),
#   5. print a summary table.
# Budget: under 8 minutes on one H100/H200-class GPU with 16 cores.
# Usage: tests/gpu/run_gpu_checks.sh [build-dir] [max-bytes]
set -u -o pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$repo/build-gpu}"
max_bytes="${2:-1073741824}"
export WEFT_SOCKET_IFNAME=lo
start=$(date +%s)

archs="${WEFT_CUDA_ARCHS:-}"
if [[ -z "$archs" ]] && command -v nvidia-smi >/dev/null; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  [[ -n "$cc" ]] && archs="$cc"
fi
archs="${archs:-80;90}"

step() { printf '\n=== %s (%ds) ===\n' "$1" "$(( $(date +%s) - start ))"; }
status_build=FAIL status_tests=FAIL status_ib=FAIL status_sweep=FAIL

step "configure + build (archs $archs)"
if cmake -S "$repo" -B "$build" -DWEFT_ENABLE_CUDA=ON "-DWEFT_CUDA_ARCHS=$archs" -DCMAKE_BUILD_TYPE=Release \
     -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_TOOLS=OFF >"$build.configure.log" 2>&1 &&
   cmake --build "$build" --target gpu_test gpu_compress_test gpu_sweep gpu_ib_test -j"$(nproc)" >"$build.build.log" 2>&1; then
  status_build=PASS
else
  tail -40 "$build.configure.log" "$build.build.log" 2>/dev/null
fi

if [[ $status_build == PASS ]]; then
  step "GPU tests"
  nvidia-smi -L 2>/dev/null || true
  if timeout 240 "$build/tests/gpu/gpu_test" --gtest_brief=1 2>&1 | tail -60 &&
     timeout 120 "$build/tests/gpu/gpu_compress_test" --gtest_brief=1 2>&1 | tail -30; then status_tests=PASS; fi

  step "GPU over IB (two processes, GPUDirect RDMA and staged)"
  ibv_devinfo -l 2>/dev/null || true
  if timeout 300 "$build/tests/gpu/gpu_ib_test" 2>&1 | tee "$build.ib.log" | tail -40; then status_ib=PASS; fi
  grep -E "SKIPPED|Skipped|no usable IB|cannot use GPU Direct" "$build.ib.log" | head -5

  step "perf sweep (AllReduce/ReduceScatter/AllGather, 2 and 4 ranks on GPU 0, 8 B .. $max_bytes B)"
  if timeout 300 "$build/tests/gpu/gpu_sweep" "$max_bytes" 2>&1 | tee "$build.sweep.log"; then status_sweep=PASS; fi
fi

step "summary"
printf '%-28s %s\n' "build (CUDA ON)" "$status_build" "GPU tests" "$status_tests" "GPU over IB (or skipped)" "$status_ib" \
  "sweep + verification" "$status_sweep"
grep -A20 '== summary ==' "$build.sweep.log" 2>/dev/null | tail -n +2
echo "total: $(( $(date +%s) - start )) s"
[[ $status_build == PASS && $status_tests == PASS && $status_ib == PASS && $status_sweep == PASS ]]
