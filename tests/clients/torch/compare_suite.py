"""Compares two torch_suite.py --results files (gloo first, weft second).

Prints the outcome counts of each backend and every test that passes on the
first but not on the second, with the second's reason (its last line).
Exits 1 when there is such a test. With --table FILE it also writes every
test's outcome on both backends (and the reason of each that does not pass).
"""
import json
import sys
from collections import Counter


def load(path):
    outcomes = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            outcomes[row["test"]] = row
    return outcomes


def last_line(reason):
    lines = [l for l in reason.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def write_table(path, ref, new):
    with open(path, "w") as f:
        f.write("# test | gloo | weft | reason (last line) when not passing\n")
        for t in sorted(set(ref) | set(new)):
            g, w = ref.get(t, {}), new.get(t, {})
            why = last_line(w.get("reason", "")) or last_line(g.get("reason", ""))
            f.write(f"{t} | {g.get('outcome', 'not run')} | {w.get('outcome', 'not run')} | {why}\n")


def main():
    args = sys.argv[1:]
    table = None
    if "--table" in args:
        i = args.index("--table")
        table = args[i + 1]
        del args[i:i + 2]
    ref_path, new_path = args[0], args[1]
    ref, new = load(ref_path), load(new_path)
    if table:
        write_table(table, ref, new)
    for name, rows in (("gloo", ref), ("weft", new)):
        counts = Counter(r["outcome"] for r in rows.values())
        print(f"{name}: {len(rows)} tests: " + ", ".join(f"{k} {counts[k]}" for k in ("pass", "fail", "error", "skip")))
    missing = sorted(t for t, r in ref.items() if r["outcome"] == "pass" and new.get(t, {}).get("outcome") != "pass")
    extra = sorted(t for t, r in new.items() if r["outcome"] == "pass" and ref.get(t, {}).get("outcome") != "pass")
    print(f"pass on gloo, not on weft: {len(missing)}")
    for t in missing:
        row = new.get(t, {"outcome": "not run", "reason": ""})
        print(f"  {t}: {row['outcome']}: {last_line(row['reason'])}")
    print(f"pass on weft, not on gloo: {len(extra)}")
    for t in extra:
        print(f"  {t}: gloo {ref[t]['outcome']}: {last_line(ref[t]['reason'])}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
