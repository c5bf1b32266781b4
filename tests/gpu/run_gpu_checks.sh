#!/usr/bin/env bash
# The GPU gate for the CUDA device path: one call, under 8 minutes on one
# H100/H200-class GPU with 16 cores, on a fresh machine (it builds):
#   1. configure + build with WEFT_ENABLE_CUDA=ON for the visible GPU,
#   2. the GPU GoogleTests (tests/gpu: every collective x type x op in and
#      out of place at misaligned offsets vs the host executor, graph capture
#      + 100 replays, two streams, 2 and 4 ranks sharing the GPU, the legacy
#      stream refusal, a kernel timeout through the status word) and the
#      host-side unit tests; a test that SKIPS on a machine with a GPU fails
#      the gate (the only expected skips are named in allowed_skips),
#   3. compute-sanitizer memcheck and racecheck on small sizes,
#   4. the device AllReduce over IB (skips itself without an HCA),
#   5. the sweep (2 and 4 ranks on the GPU, reduce kernel vs cudaMemcpy D2D),
#   6. all_reduce_perf -g 1 (weft, eager and -G), 2 and 4 ranks sharing the
#      GPU, and one-rank AllReduce through NVIDIA's libnccl.so.2 and weft's
#      libnccl.so.2 side by side (nccl_side_by_side),
#   7. a summary.
# Every wait is short: WEFT_TIMEOUT_MS=20000 unless set.
# Usage: tests/gpu/run_gpu_checks.sh [build-dir] [max-bytes]
# A build-dir made by tests/gpu/pack_prebuilt.sh (binaries built elsewhere
# with WEFT_ENABLE_CUDA) skips step 1 and saves the GPU machine's time.
set -u -o pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$repo/build-gpu}"
max_bytes="${2:-268435456}"
export WEFT_SOCKET_IFNAME=lo
export WEFT_TIMEOUT_MS="${WEFT_TIMEOUT_MS:-20000}"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
start=$(date +%s)
logs="$build.logs"
mkdir -p "$logs"

archs="${WEFT_CUDA_ARCHS:-}"
if [[ -z "$archs" ]] && command -v nvidia-smi >/dev/null; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  [[ -n "$cc" ]] && archs="$cc"
fi
archs="${archs:-80;90}"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)

step() { printf '\n=== %s (%ds) ===\n' "$1" "$(( $(date +%s) - start ))"; }
declare -A status
for k in build tests skips callpath repeat memcheck racecheck ib sweep perf nccl; do status[$k]=FAIL; done

# The whole gate stays under 8 minutes: every step's limit is cut to what
# is left of the budget (default 460 s), and a step with no time left fails.
budget="${GPU_GATE_BUDGET_S:-460}"

# Runs a command under a time limit, logging to $logs/$1.log; PASS/FAIL into status[$1].
run() {
  local name="$1" limit="$2"
  shift 2
  local left=$(( budget - ($(date +%s) - start) ))
  (( left < limit )) && limit=$left
  if (( limit < 5 )); then
    status[$name]="FAIL (out of time)"
    return
  fi
  if timeout "$limit" "$@" >"$logs/$name.log" 2>&1; then status[$name]=PASS; else status[$name]="FAIL(rc $?)"; fi
  tail -25 "$logs/$name.log"
}

prebuilt=0
if [[ -f "$build/PREBUILT" ]]; then
  # A tree made by tests/gpu/pack_prebuilt.sh: no build, its own libraries first.
  prebuilt=1
  export LD_LIBRARY_PATH="$build/lib:$build:$build/bindings/nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  chmod -R u+x "$build/tests" "$build/all_reduce_perf" 2>/dev/null || true
fi

step "configure + build (archs $archs)"
targets="gpu_test gpu_compress_test gpu_sweep gpu_ib_test launch_policy_test call_memory_test all_reduce_perf weft_nccl"
[[ -f "$cuda_home/include/nccl.h" ]] && targets="$targets nccl_side_by_side"
if (( prebuilt )); then
  echo "prebuilt binaries of commit $(cat "$build/PREBUILT"); no build"
  status[build]=PASS
elif cmake -S "$repo" -B "$build" -DWEFT_ENABLE_CUDA=ON "-DWEFT_CUDA_ARCHS=$archs" -DCMAKE_BUILD_TYPE=Release \
     -DWEFT_BUILD_TOOLS=OFF -DWEFT_BENCH_MPI=OFF >"$logs/configure.log" 2>&1 &&
   timeout $(( budget - 120 )) cmake --build "$build" --target $targets -j"$(nproc)" >"$logs/build.log" 2>&1; then
  status[build]=PASS
else
  tail -40 "$logs/configure.log" "$logs/build.log"
fi

if [[ ${status[build]} == PASS ]]; then
  nvidia-smi -L 2>/dev/null || true
  step "GPU tests + host-side unit tests"
  # gpu_test includes GpuLl (device LL with two ranks sharing the GPU, and
  # weftCommWarmup before a captured LL call), GpuSetup (no allocation,
  # registration or mapping after init and weftCommWarmup), GpuLargeGroup
  # (groups of 65-257 point-to-point calls, eager and captured), next to
  # the matrix and graphs.
  # Skips that are right on this machine: the no-GPU checks, and two GPUs
  # where there is one.
  allowed_skips='-CudaBuildWithoutGpu.*'
  (( gpus < 2 )) && allowed_skips="$allowed_skips:GpuStreams.CallerDeviceIsRestored"
  run tests 240 bash -c "'$build/tests/devhost/launch_policy_test' --gtest_brief=1 &&
                         '$build/tests/devhost/call_memory_test' --gtest_brief=1 &&
                         '$build/tests/gpu/gpu_test' --gtest_brief=1 '--gtest_filter=$allowed_skips' &&
                         '$build/tests/gpu/gpu_compress_test' --gtest_brief=1"
  skipped=$(grep -c '^\[  SKIPPED \]' "$logs/tests.log" || true)
  if (( gpus == 0 )); then
    status[skips]="n/a (no GPU)"
  elif (( skipped == 0 )); then
    status[skips]=PASS
  else
    status[skips]="FAIL (tests skipped on a machine with a GPU)"
    grep '^\[  SKIPPED \]' "$logs/tests.log" | head
  fi

  # Set-up out of the call path, on its own line of the summary (these
  # tests also ran above): scratch and staging within WEFT_DEVICE_SCRATCH
  # and a ring count captured with no eager call make no set-up action
  # (deviceSetupActions()); beyond the reserve a capture is refused and the
  # eager call grows it; the p2p ring runs with producer-side credit words.
  step "set-up out of the call path, p2p credit words"
  run callpath 60 "$build/tests/gpu/gpu_test" --gtest_brief=1 \
    '--gtest_filter=GpuSetup.*:GpuGraphCapture.NewRingCountCapturesWithoutAnEagerCall:GpuGraphRefusal.*:GpuP2p.*'

  # Repeats in one process: ranks made after others were torn down reuse
  # their device memory (a FIFO whose set-up fill had not landed once gave
  # a rank stale pieces at step 0 here, 6 times in 25).
  step "repeats: reducer after one-rank and refusal tests, 25 times in one process"
  run repeat 90 "$build/tests/gpu/gpu_test" --gtest_brief=1 --gtest_repeat=25 \
    '--gtest_filter=GpuGraphRefusal.*:GpuOneRank.*:GpuReducer.*'

  # One rank: the sanitizer runs kernels one at a time, so two ranks whose
  # kernels wait for each other would only time out.
  step "compute-sanitizer (small sizes, one rank)"
  san="$cuda_home/bin/compute-sanitizer"
  small='EveryCollective/GpuMatrix.*:RanksOnOneGpu/GpuGraph.CaptureOnceReplayHundredTimes/0:GpuGraphRefusal.*'
  export GPU_MATRIX_RANKS=1
  if [[ -x "$san" ]]; then
    GPU_MATRIX_QUICK=1 run memcheck 150 "$san" --tool memcheck --error-exitcode 99 \
      "$build/tests/gpu/gpu_test" --gtest_brief=1 "--gtest_filter=$small"
    GPU_MATRIX_QUICK=1 run racecheck 120 "$san" --tool racecheck --error-exitcode 99 \
      "$build/tests/gpu/gpu_test" --gtest_brief=1 '--gtest_filter=EveryCollective/GpuMatrix.*'
  else
    status[memcheck]="FAIL (no $san)"
    status[racecheck]="FAIL (no $san)"
  fi
  unset GPU_MATRIX_RANKS

  step "GPU over IB (two processes; skips without an HCA)"
  ibv_devinfo -l 2>/dev/null || true
  run ib 120 "$build/tests/gpu/gpu_ib_test"

  step "sweep: 2 and 4 ranks on the GPU, reduce kernel vs cudaMemcpy D2D (8 B .. $max_bytes B)"
  run sweep 150 "$build/tests/gpu/gpu_sweep" "$max_bytes"

  step "all_reduce_perf (weft): -g 1, -g 1 -G 20, -t 2 and -g 4 sharing the GPU"
  perf="$build/all_reduce_perf"
  run perf 150 bash -c "'$perf' -b 8 -e $max_bytes -f 4 -g 1 -n 20 -w 5 &&
                        '$perf' -b 8 -e 1M -f 8 -g 1 -G 20 -n 20 -w 5 &&
                        '$perf' -b 1K -e 64M -f 16 -t 2 -g 1 -n 10 &&
                        '$perf' -b 1K -e 64M -f 16 -g 4 -n 10"

  step "one-rank AllReduce: NVIDIA libnccl vs weft's libnccl.so.2, same program and GPU"
  shim=$(find "$build" -name 'libnccl.so.2' -print -quit)
  # NVIDIA's library: NCCL_REFERENCE_LIB, the CUDA Toolkit's, or the one
  # a Python environment carries (nvidia-nccl wheels, as PyTorch images do).
  nvidia_nccl="${NCCL_REFERENCE_LIB:-$cuda_home/lib64/libnccl.so.2}"
  if [[ ! -f "$nvidia_nccl" ]] && command -v python3 >/dev/null; then
    nvidia_nccl=$(python3 -c 'import glob, site, sys
for p in sys.path + site.getsitepackages():
    for f in glob.glob(p + "/nvidia/nccl/lib/libnccl.so.2"):
        print(f); sys.exit()' 2>/dev/null)
  fi
  echo "NVIDIA libnccl: ${nvidia_nccl:-none found}"
  if [[ -x "$build/tests/gpu/nccl_side_by_side" && -f "$nvidia_nccl" && -n "$shim" ]]; then
    run nccl 120 bash -c "'$build/tests/gpu/nccl_side_by_side' '$nvidia_nccl' $max_bytes 0 > '$logs/nccl_nvidia.txt' &&
                          '$build/tests/gpu/nccl_side_by_side' '$shim' $max_bytes 0 > '$logs/nccl_weft.txt' &&
                          '$build/tests/gpu/nccl_side_by_side' '$nvidia_nccl' 1048576 1 > '$logs/nccl_nvidia_graph.txt' &&
                          '$build/tests/gpu/nccl_side_by_side' '$shim' 1048576 1 > '$logs/nccl_weft_graph.txt'"
    for mode in "" _graph; do
      echo "# bytes | NVIDIA oop_us inplace_us | weft oop_us inplace_us ${mode:+(CUDA graph)}"
      paste <(grep -v '^#' "$logs/nccl_nvidia$mode.txt") <(grep -v '^#' "$logs/nccl_weft$mode.txt") |
        awk '{printf "%12s | %10s %10s | %10s %10s\n", $1, $2, $3, $6, $7}'
    done
  else
    status[nccl]="FAIL (nccl_side_by_side, $nvidia_nccl or the shim missing)"
  fi
fi

step "summary"
for k in build tests skips callpath repeat memcheck racecheck ib sweep perf nccl; do printf '%-12s %s\n' "$k" "${status[$k]}"; done
grep -A20 '== summary ==' "$logs/sweep.log" 2>/dev/null | tail -n +2
grep -E '^ +[0-9]+ ' "$logs/perf.log" 2>/dev/null | tail -4
echo "logs: $logs"
echo "total: $(( $(date +%s) - start )) s"
for k in build tests skips callpath repeat memcheck racecheck ib sweep perf nccl; do
  [[ ${status[$k]} == PASS || ${status[$k]} == "n/a (no GPU)" ]] || exit 1
done
