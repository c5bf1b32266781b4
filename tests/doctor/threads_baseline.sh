#!/usr/bin/env bash
# weft-doctor on this host, no root needed: thread ranks write a report, a
# JSON result, a baseline and a history entry (with its plot when
# matplotlib is there); the same run compares against its baseline with
# its transports unchanged;
# baselines of another cluster or weft version are refused (exit 3); two
# processes with shared memory disabled fall back to TCP, and both the
# report and the verdict against a shared-memory baseline name the host.
set -uo pipefail
doctor=$1
run=$2
trees=$3
export WEFT_SOCKET_IFNAME=lo
unset WEFT_SHM_DISABLE WEFT_HOSTID
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
quick=(--sizes 64K,256K --iters 2 --pair-bytes 256K --pair-iters 2 --lat-iters 5 --timeout 60)

"$doctor" -t 2 "${quick[@]}" --sysfs-root "$trees/roce/after" -o "$dir/r.json" --save-baseline "$dir/b.json" \
  --history "$dir/hist" > "$dir/first.out" 2>&1
rc=$?
cat "$dir/first.out"
[ $rc = 0 ] || fail "first run exited $rc"
for want in "^hosts" "^transports" "SHM *x1 *same host" "^bandwidth GB/s" "^sweep" "allreduce *65536" \
            "allgather *262144" "mlx5_0 (mlx5_core 24.10-1.1.4, fw 22.39.1002)" "^findings" "wrote $dir/b.json (baseline)"; do
  grep -q -- "$want" "$dir/first.out" || fail "report lacks '$want'"
done
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['format']=='weft-doctor-1' and r['nranks']==2, r" \
  "$dir/r.json" || fail "r.json is not a 2-rank weft-doctor result"
ls "$dir"/hist/weft-doctor-*.json > /dev/null 2>&1 || fail "no history file"
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3  # the interpreter weft-doctor runs the plot with
if $py -c "import matplotlib" 2>/dev/null; then
  [ -s "$dir/hist/trend.png" ] || fail "matplotlib is installed but there is no trend.png"
else
  grep -q "matplotlib is not installed" "$dir/first.out" || fail "no word about the missing matplotlib"
fi

# Against its own baseline: compared, and the transports unchanged. Its
# timings are not asserted (a shared machine slows a 64 KiB AllReduce of
# two threads 20x at times); the unit tests check the verdict's arithmetic.
"$doctor" -t 2 "${quick[@]}" --baseline "$dir/b.json" --latency-slack 5000 > "$dir/same.out" 2>&1
rc=$?
grep -A20 "^verdict" "$dir/same.out"
[ $rc -le 1 ] || { cat "$dir/same.out"; fail "comparison with its own baseline exited $rc"; }
grep -qE "^verdict: (OK|REGRESSED)" "$dir/same.out" || fail "no verdict"
if grep -q "now use" "$dir/same.out"; then fail "the same set-up changed transports against its own baseline"; fi

# Baselines that must be refused.
python3 - "$dir/b.json" "$dir" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
other = json.loads(json.dumps(b)); other["hosts"][0]["name"] = "elsewhere"
json.dump(other, open(sys.argv[2] + "/other.json", "w"))
old = json.loads(json.dumps(b)); old["weft_version"] = 1
json.dump(old, open(sys.argv[2] + "/old.json", "w"))
PY
for bad in other old; do
  "$doctor" -t 2 "${quick[@]}" --baseline "$dir/$bad.json" > "$dir/$bad.out" 2>&1
  rc=$?
  cat "$dir/$bad.out"
  [ $rc = 3 ] || fail "baseline $bad.json: exit $rc, expected 3 (refused)"
done
grep -q "refused: it is from another cluster or layout: its hosts (ranks) are elsewhere" "$dir/other.out" ||
  fail "the refusal does not name the other cluster"
grep -q "refused: it was measured with weft 0.0.1" "$dir/old.out" || fail "the refusal does not name the version"
echo '{"format": "weft-tests-1"}' > "$dir/perf.json"
"$doctor" -t 2 "${quick[@]}" --baseline "$dir/perf.json" > "$dir/perf.out" 2>&1
[ $? = 2 ] || fail "a perf result as baseline was not a usage error"
grep -q "not a weft-doctor result" "$dir/perf.out" || fail "no reason for the unusable baseline"

# Two processes, shared memory disabled: the pair falls back to TCP.
"$run" -np 2 --timeout 90 env WEFT_SHM_DISABLE=1 "$doctor" "${quick[@]}" --baseline "$dir/b.json" \
  > "$dir/tcp.out" 2>&1
rc=$?
cat "$dir/tcp.out"
[ $rc = 1 ] || fail "TCP fallback against a SHM baseline exited $rc, expected 1"
grep -q "same-host rank pair(s) use Socket, not shared memory (ranks 0 and 1: WEFT_SHM_DISABLE=1" "$dir/tcp.out" ||
  fail "the report does not name the fallback"
grep -q "REGRESSED $(hostname): 1 rank pair(s) now use Socket, baseline SHM" "$dir/tcp.out" ||
  fail "the verdict does not name the host"

for bad in "-t 0" "--tolerance 2" "--sizes x" "--bogus 1"; do
  if "$doctor" $bad > /dev/null 2>&1; then fail "accepted: $bad"; fi
done
echo PASS
