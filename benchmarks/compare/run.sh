#!/bin/bash
# Compare weft with Open MPI on this host: AllReduce, ReduceScatter and
# AllGather for 2 and 4 processes, 8 B .. 64 MB, runs interleaved (weft, MPI,
# weft, MPI ...) so drift hits both; prints busbw per size and weft/MPI ratios,
# then the ceilings (memcpy with 2 threads, iperf3 over loopback).
#   benchmarks/compare/run.sh [build dir] [max size] [iters]
# Gloo is not compared yet.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
max=${2:-64M}
iters=${3:-20}
plot=$here/../plot/weft-plot
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpirun_args="--allow-run-as-root --oversubscribe"

for np in 2 4; do
  for coll in allreduce reduce_scatter allgather; do
    case $coll in
      allreduce) bin=all_reduce_perf ;;
      reduce_scatter) bin=reduce_scatter_perf ;;
      allgather) bin=all_gather_perf ;;
    esac
    for round in 1 2; do
      "$here/../weft-run" -np "$np" --timeout 600 "$build/$bin" -b 8 -e "$max" -f 2 -n "$iters" -c 0 -T 120 \
        > "$out/weft-$coll-$np-$round.txt" || echo "weft $coll np=$np failed" >&2
      if [ -x "$build/compare/mpi_perf" ]; then
        timeout 600 mpirun $mpirun_args -np "$np" "$build/compare/mpi_perf" "$coll" 8 "$max" "$iters" \
          > "$out/mpi-$coll-$np-$round.txt" 2>/dev/null || echo "mpi $coll np=$np failed" >&2
      fi
    done
    echo "== $coll, $np processes: busbw GB/s (round 1 | round 2)"
    /usr/bin/python3 - "$plot" "$out" "$coll" "$np" <<'PY'
import importlib.machinery, importlib.util, os, sys
plot, out, coll, np = sys.argv[1:5]
loader = importlib.machinery.SourceFileLoader("weft_plot", plot)
spec = importlib.util.spec_from_loader("weft_plot", loader)
wp = importlib.util.module_from_spec(spec)
loader.exec_module(wp)
def series(name):
    runs = []
    for rnd in (1, 2):
        path = os.path.join(out, "%s-%s-%s-%d.txt" % (name, coll, np, rnd))
        rows = wp.parse_file(path)["rows"] if os.path.exists(path) else []
        runs.append({r["size"]: r["out"]["busbw"] for r in rows})
    return runs
weft, mpi = series("weft"), series("mpi")
sizes = sorted(set(weft[0]) | set(mpi[0]))
print("%12s %16s %16s %8s" % ("size", "weft", "mpi", "ratio"))
for s in sizes:
    w = [r.get(s) for r in weft]; m = [r.get(s) for r in mpi]
    best_w = max([x for x in w if x is not None], default=None)
    best_m = max([x for x in m if x is not None], default=None)
    ratio = "%.2f" % (best_w / best_m) if best_w and best_m else "-"
    fmt = lambda v: " | ".join("-" if x is None else "%.3f" % x for x in v)
    print("%12s %16s %16s %8s" % (wp.human_size(s), fmt(w), fmt(m), ratio))
PY
  done
done

echo "== ceilings"
[ -x "$build/compare/memcpy_bw" ] && "$build/compare/memcpy_bw" 2
if command -v iperf3 >/dev/null; then
  iperf3 -s -1 -B 127.0.0.1 -p 5299 >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -l 1M -t 3 2>/dev/null | grep -E "sender|receiver" | sed 's/^/iperf3 loopback: /'
  wait "$server" 2>/dev/null
fi
