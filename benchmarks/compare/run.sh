#!/bin/bash
# Compare weft with Open MPI and Gloo on this host, and with the machine's own
# ceilings. For shm and TCP, 2 and 4 processes: AllReduce (weft, Open MPI as
# shipped, Open MPI with malloc tuned so its temporaries stay mapped, Gloo
# ring over TCP), ReduceScatter and AllGather (weft, both Open MPIs), 8 B ..
# max. Runs are interleaved (weft, mpi, mpi-tuned, gloo, then the next
# configuration; each round runs them all) so drift hits all; the best of the
# rounds is printed with ratios weft/peer. Each round starts with the
# machine's ceilings (memcpy and streaming add with 2 threads; iperf3 -l 1M
# over 127.0.0.1, one direction and both at once; the best round counts),
# then the targets: weft's time and bandwidth against Open MPI's better
# build and against the ceilings.
# Over shm weft also runs with registered buffers from weftMemAlloc
# (perf flag -R 1, column weft-reg: the single-copy path).
#   benchmarks/compare/run.sh [build dir] [max size] [iters]
# Environment: ROUNDS (2), NPS ("2 4"), NETS ("shm tcp"),
#   COLLS ("allreduce reduce_scatter allgather"), WEFT_BIND (none: weft-run's
#   --bind for weft's and Gloo's ranks; mpirun binds Open MPI's ranks to a
#   core each by default when they fit, `auto` does the same for weft).
# Everything stays on loopback: weft WEFT_SOCKET_IFNAME=lo, Open MPI
# btl_tcp_if_include/oob_tcp_if_include lo, Gloo and iperf3 on 127.0.0.1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
max=${2:-64M}
iters=${3:-20}
rounds=${ROUNDS:-2}
nps=${NPS:-2 4}
nets=${NETS:-shm tcp}
colls=${COLLS:-allreduce reduce_scatter allgather}
plot=$here/../plot/weft-plot
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tuned="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"
export WEFT_SOCKET_IFNAME=lo

mpi_args() {  # $1: shm|tcp
  local a="--allow-run-as-root --oversubscribe --mca pml ob1 --mca oob_tcp_if_include lo"
  if [ "$1" = tcp ]; then echo "$a --mca btl tcp,self --mca btl_tcp_if_include lo"
  else echo "$a --mca btl vader,self"; fi
}

run_weft() {  # net np bin file [extra perf flags]
  local env=()
  [ "$1" = tcp ] && env=(WEFT_SHM_DISABLE=1)
  env "${env[@]}" "$here/../weft-run" -np "$2" --bind "${WEFT_BIND:-none}" --timeout 900 "$build/$3" -b 8 -e "$max" -f 2 -n "$iters" -c 0 \
    -T 300 "${@:5}" > "$4" 2>"$4.err" || echo "weft $3 $1 np=$2 ${*:5} failed (see stderr below)" >&2
}

run_mpi() {  # net np coll file [tuned]
  local cmd=(timeout 900 mpirun $(mpi_args "$1") -np "$2")
  [ "${5:-}" = tuned ] && cmd+=(-x "GLIBC_TUNABLES=$tuned")
  "${cmd[@]}" "$build/compare/mpi_perf" "$3" 8 "$max" "$iters" > "$4" 2>"$4.err" \
    || echo "mpi${5:+-$5} $3 $1 np=$2 failed" >&2
}

run_gloo() {  # np file
  local store
  store=$(mktemp -d "$out/gloo-store.XXXX")
  "$here/../weft-run" -np "$1" --bind "${WEFT_BIND:-none}" --timeout 900 "$build/compare/gloo_allreduce" "$store" 8 "$max" "$iters" \
    > "$2" 2>"$2.err" || echo "gloo np=$1 failed" >&2
}

echo "# weft vs Open MPI $(ompi_info --version 2>/dev/null | head -1 | awk '{print $NF}') and Gloo," \
  "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# max $max, $iters iterations, best of $rounds interleaved rounds; busbw in GB/s (out-of-place)"

measure_ceilings() {  # round
  echo "round $1: load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/loads.txt"
  "$build/compare/memcpy_bw" 2 > "$out/ceiling-mem-$1.txt" 2>&1
  command -v iperf3 >/dev/null || return 0
  iperf3 -s -1 -B 127.0.0.1 -p 5299 >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -l 1M -t 3 -f g 2>/dev/null | grep -E "receiver" >> "$out/ceiling-tcp.txt"
  wait "$server" 2>/dev/null
  # Both directions at once, as a 2-rank ring moves data: what each
  # direction gets when the two cores also carry the other one.
  iperf3 -s -1 -B 127.0.0.1 -p 5299 >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  iperf3 -c 127.0.0.1 -p 5299 -l 1M -t 3 -f g --bidir 2>/dev/null | grep -E "receiver" >> "$out/ceiling-tcp-bidir.txt"
  wait "$server" 2>/dev/null
}

# Rounds outermost: every configuration and the ceilings are measured once
# per round, so a change of load during the run reaches all of them alike
# and a ceiling is never taken under other conditions than the runs it
# divides.
for round in $(seq 1 "$rounds"); do
  measure_ceilings "$round"
  for net in $nets; do
    for np in $nps; do
      for coll in $colls; do
        case $coll in
          allreduce) bin=all_reduce_perf ;;
          reduce_scatter) bin=reduce_scatter_perf ;;
          allgather) bin=all_gather_perf ;;
        esac
        tag="$coll-$net-$np-$round"
        run_weft "$net" "$np" "$bin" "$out/weft-$tag.txt"
        # Buffers from weftMemAlloc, registered: the single-copy path.
        [ "$net" = shm ] && run_weft "$net" "$np" "$bin" "$out/weftreg-$tag.txt" -R 1
        if [ -x "$build/compare/mpi_perf" ]; then
          run_mpi "$net" "$np" "$coll" "$out/mpi-$tag.txt"
          run_mpi "$net" "$np" "$coll" "$out/mpituned-$tag.txt" tuned
        fi
        if [ "$coll" = allreduce ] && [ "$net" = tcp ] && [ -x "$build/compare/gloo_allreduce" ]; then
          run_gloo "$np" "$out/gloo-$tag.txt"
        fi
      done
    done
  done
done
echo "end: load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/loads.txt"

/usr/bin/python3 - "$plot" "$out" "$rounds" "$nets" "$nps" "$colls" <<'PY'
import glob, importlib.machinery, importlib.util, os, re, sys
plot, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
nets, nps, colls = sys.argv[4].split(), sys.argv[5].split(), sys.argv[6].split()
loader = importlib.machinery.SourceFileLoader("weft_plot", plot)
spec = importlib.util.spec_from_loader("weft_plot", loader)
wp = importlib.util.module_from_spec(spec)
loader.exec_module(wp)

def best(peer, coll, net, np):
    """{size: (best busbw, best time)} over the rounds, out-of-place."""
    res = {}
    for rnd in range(1, rounds + 1):
        path = os.path.join(out, "%s-%s-%s-%s-%d.txt" % (peer, coll, net, np, rnd))
        if not os.path.exists(path):
            continue
        for r in wp.parse_file(path)["rows"]:
            o = r.get("out")
            if not o:
                continue
            bw, t = res.get(r["size"], (0.0, float("inf")))
            res[r["size"]] = (max(bw, o["busbw"]), min(t, o["time"]))
    return res

peers = [("weft", "weft"), ("weftreg", "weft-reg"), ("mpi", "ompi"), ("mpituned", "ompi-tuned"), ("gloo", "gloo")]
data = {}
for net in nets:
    for np in nps:
        for coll in colls:
            series = {p: best(p, coll, net, np) for p, _ in peers}
            data[(coll, net, np)] = series
            shown = [(p, label) for p, label in peers if series[p]]
            if not shown:
                continue
            print("\n== %s, %s processes, %s" % (coll, np, "TCP (weft: socket transport)" if net == "tcp" else "shm"))
            head = "%10s" % "size" + "".join("%12s" % label for _, label in shown)
            head += "".join("%12s" % ("/" + label) for p, label in shown if not p.startswith("weft"))
            print(head + "   (busbw GB/s; time us for <= 1K; ratios weft/peer)")
            sizes = sorted(set().union(*[set(series[p]) for p, _ in shown]))
            for s in sizes:
                small = s <= 1024
                line = "%10s" % wp.human_size(s)
                for p, _ in shown:
                    v = series[p].get(s)
                    line += "%12s" % ("-" if v is None else ("%.1fus" % v[1] if small else "%.3f" % v[0]))
                w = series["weft"].get(s)
                for p, _ in shown:
                    if p.startswith("weft"):
                        continue
                    v = series[p].get(s)
                    if not w or not v:
                        line += "%12s" % "-"
                    elif small:
                        line += "%12.2f" % (v[1] / w[1]) if w[1] > 0 else "%12s" % "-"
                    else:
                        line += "%12.2f" % (w[0] / v[0]) if v[0] > 0 else "%12s" % "-"
                print(line)
print("\n(for sizes <= 1K the ratio is peer time / weft time: > 1 means weft is faster)")

print("\n== ceilings")
copy = add = tcp = None
print(open(os.path.join(out, "loads.txt")).read().strip())
copies, adds = [], []
for path in sorted(glob.glob(os.path.join(out, "ceiling-mem-*.txt"))):
    text = open(path).read()
    m = re.search(r"memcpy \d+ threads: ([\d.]+)", text)
    if m:
        copies.append(float(m.group(1)))
    m = re.search(r"streaming add \d+ threads: ([\d.]+)", text)
    if m:
        adds.append(float(m.group(1)))
# The best round is the ceiling: a slower round measured load, not the machine.
copy = max(copies) if copies else None
add = max(adds) if adds else None
if copies:
    print("memcpy 2 threads: %s GB/s total (best %.2f)" % (", ".join("%.2f" % c for c in copies), copy))
if adds:
    print("streaming add 2 threads: %s GB/s total, output bytes (best %.2f)" % (", ".join("%.2f" % a for a in adds), add))
tcp_path = os.path.join(out, "ceiling-tcp.txt")
if os.path.exists(tcp_path):
    rates = []
    for line in open(tcp_path):
        m = re.search(r"([\d.]+) Gbits/sec", line)
        if m:
            rates.append(float(m.group(1)) / 8)
    if rates:
        tcp = max(rates)
        print("iperf3 -l 1M over 127.0.0.1, one direction: %s GB/s (best %.2f)" % (
            ", ".join("%.2f" % r for r in rates), tcp))

bidir = None
bidir_path = os.path.join(out, "ceiling-tcp-bidir.txt")
if os.path.exists(bidir_path):
    # Two receiver lines (one per direction) per run: the mean of each run's
    # pair is what one direction carries while the other one runs too.
    rates = [float(m.group(1)) / 8 for m in (re.search(r"([\d.]+) Gbits/sec", l) for l in open(bidir_path)) if m]
    pairs = [(rates[i] + rates[i + 1]) / 2 for i in range(0, len(rates) - 1, 2)]
    if pairs:
        bidir = max(pairs)
        print("iperf3 --bidir -l 1M over 127.0.0.1, per direction with both running: %s GB/s (best %.2f)" % (
            ", ".join("%.2f" % r for r in pairs), bidir))

def get(coll, net, np, peer, size, what):
    v = data.get((coll, net, np), {}).get(peer, {}).get(size)
    return None if v is None else (v[0] if what == "bw" else v[1])

def show(label, value, target, ok):
    status = "-" if ok is None else ("met" if ok else "MISSED")
    print("%-62s %-22s %-24s %s" % (label, value, target, status))

print("\n== targets (best of the rounds)")
M64, K64, M1 = 64 << 20, 64 << 10, 1 << 20

def best_mpi(coll, net, np, size, what):
    """Open MPI's better figure of its two builds (shipped, malloc-tuned)."""
    vals = [x for x in (get(coll, net, np, "mpi", size, what), get(coll, net, np, "mpituned", size, what)) if x]
    if not vals:
        return None
    return max(vals) if what == "bw" else min(vals)

def latency(np, net, label):
    w, m = get("allreduce", net, np, "weft", 8, "t"), best_mpi("allreduce", net, np, 8, "t")
    if w is not None and m:
        show("%s 8 B AllReduce vs Open MPI (%.1f us)" % (label, m), "%.1f us = %.2fx" % (w, w / m), "<= Open MPI", w <= m)

def busbw_vs_mpi(np, net, size, label, factor):
    w, m = get("allreduce", net, np, "weft", size, "bw"), best_mpi("allreduce", net, np, size, "bw")
    if w is not None and m:
        show("%s busbw vs Open MPI (%.2f)" % (label, m), "%.2f GB/s = %.2fx" % (w, w / m), ">= %gx" % factor, w >= factor * m)

latency("2", "shm", "shm 2p")
busbw_vs_mpi("2", "shm", K64, "shm 2p 64K", 2)
for peer, label, frac in (("weftreg", "registered", 0.8), ("weft", "unregistered", 0.6)):
    w = get("allreduce", "shm", "2", peer, M64, "bw")
    if w is not None and copy:
        show("shm 2p 64M %s busbw vs copy ceiling (memcpy/2 = %.2f)" % (label, copy / 2),
             "%.2f GB/s = %.0f%%" % (w, 100 * w / (copy / 2)), ">= %d%%" % (100 * frac), w >= frac * copy / 2)
latency("4", "shm", "shm 4p")
busbw_vs_mpi("4", "shm", M1, "shm 4p 1M", 1.5)
latency("2", "tcp", "TCP 2p")
w = get("allreduce", "tcp", "2", "weft", M64, "bw")
if w is not None and tcp:
    show("TCP 2p 64M busbw vs iperf3 -l 1M one way (%.2f)" % tcp, "%.2f GB/s = %.0f%%" % (w, 100 * w / tcp), ">= 80%",
         w >= 0.8 * tcp)
if w is not None and bidir:
    show("TCP 2p 64M busbw vs iperf3 both ways (%.2f)" % bidir, "%.0f%%" % (100 * w / bidir), "(info)", None)
g = get("allreduce", "tcp", "2", "gloo", M64, "bw")
if w is not None and g:
    show("TCP 2p 64M busbw vs Gloo (%.2f)" % g, "%.2fx" % (w / g), "(info)", None)
# ReduceScatter and AllGather at the targets' sizes: no target of their own,
# reported so that a change made for AllReduce shows what it did to them.
for coll in ("reduce_scatter", "allgather"):
    if coll not in colls:
        continue
    for net, np in (("shm", "2"), ("shm", "4"), ("tcp", "2")):
        if net not in nets or np not in nps:
            continue
        for size, what in ((8, "t"), (K64, "bw"), (M1, "bw"), (M64, "bw")):
            label = "%s %s %sp %s" % (coll, net, np, wp.human_size(size))
            for peer in ("weft", "weftreg"):
                wv, mv = get(coll, net, np, peer, size, what), best_mpi(coll, net, np, size, what)
                if wv is None or not mv:
                    continue
                name = label + (" registered" if peer == "weftreg" else "")
                if what == "t":
                    show("%s vs Open MPI (%.1f us)" % (name, mv), "%.1f us = %.2fx" % (wv, wv / mv), "(info)", None)
                else:
                    show("%s busbw vs Open MPI (%.2f)" % (name, mv), "%.2f GB/s = %.2fx" % (wv, wv / mv), "(info)", None)
PY

for f in "$out"/*.err; do
  # The perf binaries say at INFO that buffers are on the host when no GPU
  # is usable: expected here, so only other lines are shown.
  if grep -qv -e '^\s*$' -e 'INFO host buffers: no usable GPU' "$f" 2>/dev/null; then
    echo "--- stderr of $(basename "$f" .err):"
    grep -v -e 'INFO host buffers: no usable GPU' "$f" | head -5
  fi
done
