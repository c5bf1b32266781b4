#!/usr/bin/env python3
"""weft-sim --write-tune writes a file the library's tune-file reader takes
(weft-select --tune uses the same loadTuneFile as WEFT_TUNE_FILE), and the
selector then follows the simulation: at every size its choice is within 5%
of the simulated best (the reader smooths interior curve points, so near a
tie it may take the runner-up), and the file changes at least one choice
of the analytic model on this cluster (else the check would pass with the
file ignored).

usage: tune_file_test.py WEFT_SIM WEFT_SELECT TOPOLOGY"""
import os
import subprocess
import sys
import tempfile

sim, select, topo = sys.argv[1:4]
env = dict(os.environ)
env.pop("WEFT_ALGO", None)
env.pop("WEFT_TUNE_FILE", None)
with tempfile.TemporaryDirectory() as d:
    tune = os.path.join(d, "sim.conf")
    out = subprocess.run([sim, "--topo", topo, "-b", "8", "-e", "4G", "-f", "4", "--write-tune", tune],
                         check=True, capture_output=True, text=True, env=env).stdout
    times = {}  # size -> {algo: us}
    for line in out.splitlines():
        f = line.split()
        if line.startswith("#") or len(f) < 9:
            continue
        times.setdefault(int(f[0]), {})[f[8]] = float(f[3])

    def chosen(extra):
        table = subprocess.run([select, "--topo", topo, "--gpus"] + extra, check=True, capture_output=True,
                               text=True, env=env).stdout
        picks = {}
        for line in table.splitlines():
            f = line.split()
            if f and f[0].isdigit():
                picks[int(f[0])] = line.split("  ")[-1].split()[0]
        return picks

    with_tune, without = chosen(["--tune", tune]), chosen([])

bad, changed = [], 0
for size, per in sorted(times.items()):
    best = min(per.values())
    pick = with_tune.get(size)
    if pick not in per or per[pick] > best * 1.05:
        bad.append(f"{size} B: selector picks {pick}, simulated {per}")
    changed += without.get(size) != pick
for b in bad:
    print("mismatch:", b)
print(f"{len(times)} sizes, {len(bad)} mismatches, {changed} choices changed by the file")
sys.exit(1 if bad or not changed or not times else 0)
