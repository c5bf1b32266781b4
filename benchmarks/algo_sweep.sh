#!/usr/bin/env bash
# Measures AllReduce time per size for each algorithm and for the selector's
# own choice, interleaved in one run, and prints one table:
#   size  ring  binarytree  tree  auto  best  auto/best
# Usage: benchmarks/algo_sweep.sh [-np N] [-t] [BUILD_DIR]
#   -np N  ranks (default 8), as processes via weft-run; -t: as threads
set -euo pipefail
np=8
threads=0
while [ $# -gt 0 ]; do
  case "$1" in
    -np) np=$2; shift 2 ;;
    -t) threads=1; shift ;;
    *) break ;;
  esac
done
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
export WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo}
declare -A t
algos="ring binarytree tree auto"
run() {  # $1 algo -> lines "size time_us"
  local env=()
  [ "$1" != auto ] && env=(WEFT_ALGO="allreduce:$1")
  if [ $threads = 1 ]; then
    env "${env[@]}" "$build/all_reduce_perf" -t "$np" -b 8 -e 64M -f 8 -n 20 -w 3 -c 0
  else
    env "${env[@]}" "$here/weft-run" -np "$np" "$build/all_reduce_perf" -b 8 -e 64M -f 8 -n 20 -w 3 -c 0
  fi | awk '/^ +[0-9]/ {print $1, $6}'
}
for rep in 1 2; do
  for a in $algos; do
    while read -r size us; do
      key="$a:$size"
      # keep the faster of the two repetitions (noise is one-sided)
      if [ -z "${t[$key]:-}" ] || awk "BEGIN{exit !($us < ${t[$key]})}"; then t[$key]=$us; fi
    done < <(run "$a")
  done
done
printf "%12s %10s %10s %10s %10s %10s %9s\n" size ring binarytree tree auto best auto/best
for size in $(for k in "${!t[@]}"; do echo "${k#*:}"; done | sort -n | uniq); do
  r=${t[ring:$size]}; b=${t[binarytree:$size]}; d=${t[tree:$size]}; a=${t[auto:$size]}
  best=$(printf "%s\n%s\n%s\n" "$r" "$b" "$d" | sort -g | head -1)
  printf "%12s %10s %10s %10s %10s %10s %9.2f\n" "$size" "$r" "$b" "$d" "$a" "$best" "$(awk "BEGIN{print $a/$best}")"
done
