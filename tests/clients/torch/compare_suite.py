"""Compares two torch_suite.py --results files (gloo first, weft second).

Prints the outcome counts of each backend and every test that passes on the
first but not on the second, with the second's reason (its last line).
Exits 1 when there is such a test.
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


def main():
    ref_path, new_path = sys.argv[1], sys.argv[2]
    ref, new = load(ref_path), load(new_path)
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
