#!/usr/bin/env python3
"""The cost model's choice against the simulation: runs weft-sim with the
given arguments and, at every simulated size from --from up, checks that the
algorithm the selector picks is within --slack of the fastest simulated one
(its simulated time over the fastest's). The pick is weft-sim's own
"(selector)" mark (the selector over weft-sim's view of the cluster), or with
--select WEFT_SELECT the library's: weft-select on the same topology file and
channels (the communicator's cost inputs, topo::costInputsFromTopology).
Prints one line per size; exits 1 at the first size past the slack.

usage: selector_agrees.py [--slack 1.10] [--from BYTES] [--select WEFT_SELECT] -- WEFT_SIM ARGS..."""
import subprocess
import sys


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def size_bytes(v):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(v[-1:].upper(), 1)
    return int(float(v[:-1] if scale > 1 else v) * scale)


def library_picks(select, sim_args):
    topo = option(sim_args, "--topo")
    if topo is None:
        sys.exit("--select needs weft-sim's --topo")
    cmd = [select, "--topo", topo, "--gpus", "--channels", option(sim_args, "--channels", "1"),
           "--coll", option(sim_args, "--coll", "allreduce")]
    picks = {}
    for line in subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if f and f[0].isdigit():
            picks[int(f[0])] = line.split("  ")[-1].split()[0]
    return picks


def main(argv):
    sep = argv.index("--")
    opts, sim_cmd = argv[:sep], argv[sep + 1:]
    slack = float(option(opts, "--slack", "1.10"))
    first = size_bytes(option(opts, "--from", "0"))
    select = option(opts, "--select")
    out = subprocess.run(sim_cmd, check=True, capture_output=True, text=True).stdout
    times, marked = {}, {}
    for line in out.splitlines():
        f = line.split()
        if line.startswith("#") or len(f) < 9:
            continue
        times.setdefault(int(f[0]), {})[f[8]] = float(f[3])
        if "(selector)" in line:
            marked[int(f[0])] = f[8]
    picks = library_picks(select, sim_cmd[1:]) if select else marked
    worst, bad = 1.0, []
    for size, per in sorted(times.items()):
        if size < first:
            continue
        fastest = min(per, key=per.get)
        pick = picks.get(size)
        if pick not in per:
            ratio = float("inf")
        elif per[fastest] <= 0:  # nothing to move (fewer elements than ranks): every algorithm takes 0
            ratio = 1.0 if per[pick] <= 0 else float("inf")
        else:
            ratio = per[pick] / per[fastest]
        worst = max(worst, ratio)
        print(f"{size:>12} fastest {fastest:<10} {per[fastest]:>12.2f} us  picked {pick or '-':<10} {ratio:6.3f}")
        if ratio > slack:
            bad.append(size)
    print(f"worst {worst:.3f} (slack {slack}); {len(bad)} sizes past it: {bad}")
    return 1 if bad or not times else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
