#!/usr/bin/env bash
# weft-tune end to end: a calibration with thread ranks writes curves that a
# --check run of the same shape, as processes, then uses; bad options are
# refused. The check's verdict itself depends on timing noise and is not
# asserted here (benchmarks, not tests, judge speed).
set -euo pipefail
tune=$1
run=$2
export WEFT_SOCKET_IFNAME=lo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$tune" -t 2 -b 8 -e 64K -f 64 -r 3 --sample-us 500 -o "$dir/t.conf" > "$dir/cal.out" || { cat "$dir/cal.out"; fail "calibration exited $?"; }
cat "$dir/cal.out"
grep -q '^measured.nranks 2$' "$dir/t.conf" || fail "no curve shape in the tune file"
[ "$(grep -c '^measured\.ring ' "$dir/t.conf")" = 4 ] || fail "expected 4 ring points (8, 512, 32K, 64K)"
[ "$(grep -c '^measured\.tree ' "$dir/t.conf")" = 4 ] || fail "expected 4 tree points"

# A second calibration merged with the first: same points, medians.
"$tune" -t 2 -b 8 -e 64K -f 64 -r 3 --sample-us 500 -o "$dir/t2.conf" > /dev/null || fail "second calibration"
"$tune" --merge "$dir/t.conf" "$dir/t2.conf" -o "$dir/m.conf" || fail "merge exited $?"
[ "$(grep -c '^measured\.ring ' "$dir/m.conf")" = 4 ] || fail "merged file lost points"
"$tune" -t 2 -b 8 -e 1K -f 64 -r 1 --sample-us 100 -o "$dir/other.conf" > /dev/null || fail "third calibration"
if "$tune" --merge "$dir/t.conf" "$dir/other.conf" -o "$dir/bad.conf" 2> "$dir/merge.err"; then
  fail "merged calibrations of different sizes"
fi
grep -q "different sizes" "$dir/merge.err" || fail "merge error does not say why"

status=0
WEFT_TUNE_FILE="$dir/t.conf" "$run" -np 2 --timeout 120 "$tune" -b 8 -e 64K -f 64 -r 3 --sample-us 500 --check \
  > "$dir/check.out" || status=$?
cat "$dir/check.out"
[ $status -le 1 ] || fail "check exited $status"
grep -q 'measured curves match this shape' "$dir/check.out" || fail "the check did not use the curves"
grep -q 'wrong elements: 0$' "$dir/check.out" || fail "wrong results"
[ "$(grep -cE '^ +[0-9]+ ' "$dir/check.out")" = 4 ] || fail "expected 4 rows"

for bad in "-t 1" "-b 2" "-f 1" "-r 0" "--transport ib" "--bogus"; do
  if "$tune" $bad > /dev/null 2>&1; then fail "accepted: $bad"; fi
done
echo PASS
