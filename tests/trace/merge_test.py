#!/usr/bin/env python3
"""weft-trace-merge on synthetic per-rank files with known clock offsets.

Three ranks on three hosts ran one call that started at the same true
instant, 100 us after the init barrier; each rank's steady clock is offset
by a known amount. After the merge every rank's call must start at the same
timestamp on rank 0's clock. Two ranks sharing a host are left unshifted
(they share a clock) unless --align-same-host is given.
"""
import json
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def trace(rank, host, sync_ns, call_ts_us, dropped=0):
    return {
        "traceEvents": [
            {"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}},
            {"name": "AllReduce", "cat": "call", "ph": "X", "ts": call_ts_us, "dur": 10.0, "pid": rank, "tid": 0,
             "args": {"bytes": 4096, "algorithm": "ring"}},
        ],
        "displayTimeUnit": "ns",
        "otherData": {"weft_trace_version": 1, "max_events": 100, "recorded": 1 + dropped, "dropped": dropped,
                      "ranks": [{"rank": rank, "pid": 100 + rank, "host": host, "comm": "comm",
                                 "clock_sync_ns": sync_ns, "wall_sync_ns": 0}]},
    }


def run(args):
    p = subprocess.run([sys.executable, tool] + args, capture_output=True, text=True)
    check(p.returncode == 0, f"{args}: exit {p.returncode}: {p.stderr}")
    return p


with tempfile.TemporaryDirectory() as d:
    # Rank r's clock reads offset[r] more than rank 0's at the same instant.
    offsets_ns = {0: 0, 1: 5_000_000_123, 2: -2_500_000_000}
    base_ns = 1_000_000_000_000
    files = []
    for r, off in offsets_ns.items():
        sync = base_ns + off
        path = os.path.join(d, f"t.{r}.json")
        with open(path, "w") as f:
            json.dump(trace(r, f"host{r}", sync, (sync + 100_000) / 1000.0, dropped=r), f)
        files.append(path)
    out = os.path.join(d, "merged.json")
    # Files in any order: the reference is rank 0's.
    run(["-o", out] + list(reversed(files)))
    merged = json.load(open(out))
    calls = {e["pid"]: e["ts"] for e in merged["traceEvents"] if e.get("ph") == "X"}
    check(sorted(calls) == [0, 1, 2], f"calls of every rank: {calls}")
    want = (base_ns + 100_000) / 1000.0
    for r, ts in calls.items():
        check(abs(ts - want) < 0.002, f"rank {r}'s call at {ts}, want {want} on rank 0's clock")
    offs = {x["rank"]: x["offset_us"] for x in merged["otherData"]["ranks"]}
    for r, off in offsets_ns.items():
        check(abs(offs[r] - off / 1000.0) < 0.002, f"rank {r} offset {offs[r]} us, want {off / 1000.0}")
    check(merged["otherData"]["dropped"] == 3, f"dropped summed: {merged['otherData']['dropped']}")
    check(sum(1 for e in merged["traceEvents"] if e.get("ph") == "M") == 3, "one process_name per rank")

    # --reference 2: rank 2's clock.
    run(["--reference", "2", "-o", out] + files)
    calls = {e["pid"]: e["ts"] for e in json.load(open(out))["traceEvents"] if e.get("ph") == "X"}
    want2 = (base_ns + offsets_ns[2] + 100_000) / 1000.0
    check(all(abs(ts - want2) < 0.002 for ts in calls.values()), f"--reference 2: {calls}, want {want2}")

    # Same host: one clock, no shift unless asked.
    same = []
    for r, off in ((0, 0), (1, 40_000)):
        sync = base_ns + off
        path = os.path.join(d, f"s.{r}.json")
        with open(path, "w") as f:
            json.dump(trace(r, "onehost", sync, 7.0), f)
        same.append(path)
    run(["-o", out] + same)
    calls = {e["pid"]: e["ts"] for e in json.load(open(out))["traceEvents"] if e.get("ph") == "X"}
    check(calls == {0: 7.0, 1: 7.0}, f"same host unshifted: {calls}")
    run(["--align-same-host", "-o", out] + same)
    calls = {e["pid"]: e["ts"] for e in json.load(open(out))["traceEvents"] if e.get("ph") == "X"}
    check(abs(calls[1] - (7.0 - 40.0)) < 0.002, f"--align-same-host: {calls}")

    # Bad input: a file that is not a trace.
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write("{\"x\": 1}")
    p = subprocess.run([sys.executable, tool, bad], capture_output=True, text=True)
    check(p.returncode == 1 and "traceEvents" in p.stderr, f"bad file: {p.returncode} {p.stderr}")

for f in failures:
    print("FAIL:", f)
print("ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
