#!/bin/bash
# Two builds of weft side by side: the same perf binary from each, run in
# interleaved rounds (A, B, A, B, ...) so drift hits both, the best time per
# size over the rounds kept, and the ratio A/B printed (above 1: B faster).
# For a change's before/after, or this week against a kept build.
#   benchmarks/compare/ab.sh <build A> <build B> [perf binary] [max size] [iters]
# Environment: ROUNDS (3), NPS ("2"), NETS ("shm tcp"); tcp sets
# WEFT_SHM_DISABLE=1 so the socket transport carries the data. Loopback only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 2 ]; then
  echo "usage: $0 <build A> <build B> [perf binary (all_reduce_perf)] [max size (16M)] [iters (20)]" >&2
  exit 2
fi
a=$(cd "$1" && pwd) || exit 2
b=$(cd "$2" && pwd) || exit 2
bin=${3:-all_reduce_perf}
max=${4:-16M}
iters=${5:-20}
rounds=${ROUNDS:-3}
nps=${NPS:-2}
nets=${NETS:-shm tcp}
for d in "$a" "$b"; do
  [ -x "$d/$bin" ] || { echo "$0: no $bin in $d" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export WEFT_SOCKET_IFNAME=lo
echo "# A=$a B=$b $bin, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, best of $rounds interleaved rounds"
for net in $nets; do
  for np in $nps; do
    env=()
    [ "$net" = tcp ] && env=(WEFT_SHM_DISABLE=1)
    for round in $(seq 1 "$rounds"); do
      for side in A B; do
        dir=$a
        [ $side = B ] && dir=$b
        env "${env[@]}" "$here/../weft-run" -np "$np" --timeout 600 "$dir/$bin" -b 8 -e "$max" -f 4 -n "$iters" \
          -w 5 > "$out/$side-$net-$np-$round.txt" 2>&1 || echo "$side $net np=$np round $round failed" >&2
      done
    done
  done
done
/usr/bin/python3 - "$here/../plot/weft-plot" "$out" "$rounds" "$nets" "$nps" <<'PY'
import importlib.machinery, importlib.util, os, sys
plot, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
loader = importlib.machinery.SourceFileLoader("weft_plot", plot)
wp = importlib.util.module_from_spec(importlib.util.spec_from_loader("weft_plot", loader))
loader.exec_module(wp)

def best(side, net, np):
    """{size: (min time us, max busbw GB/s, wrong)} over the rounds, out-of-place."""
    res = {}
    for rnd in range(1, rounds + 1):
        path = os.path.join(out, "%s-%s-%s-%d.txt" % (side, net, np, rnd))
        if not os.path.exists(path):
            continue
        for r in wp.select(wp.parse_file(path)["rows"]):
            o = r["out"]
            t, bw, wrong = res.get(r["size"], (float("inf"), 0.0, 0))
            res[r["size"]] = (min(t, o["time"]), max(bw, o["busbw"]), wrong + (o["wrong"] or 0))
    return res

worst = 0
for net in sys.argv[4].split():
    for np in sys.argv[5].split():
        A, B = best("A", net, np), best("B", net, np)
        print("\n== %s, %s processes" % (net, np))
        print("%10s %11s %11s %10s %10s %8s" % ("size", "A us", "B us", "A GB/s", "B GB/s", "A/B"))
        for s in sorted(set(A) & set(B)):
            (ta, bwa, wa), (tb, bwb, wb) = A[s], B[s]
            flag = "  WRONG" if wa or wb else ""
            worst += 1 if flag else 0
            print("%10s %11.2f %11.2f %10.3f %10.3f %8.3f%s" % (wp.human_size(s), ta, tb, bwa, bwb, ta / tb, flag))
sys.exit(3 if worst else 0)
PY
