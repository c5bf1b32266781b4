#!/bin/bash
# weft-run's --bind: `core` gives each rank one CPU of its own (when the
# ranks fit), `none` (the default) leaves the launcher's CPUs, anything else
# is a usage error.
set -u
run=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
ncpu=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
mine=$(taskset -pc $$ | sed 's/.*: //')
show='echo "$WEFT_RANK $(taskset -pc $$ | sed "s/.*: //")"'

out=$("$run" -np 2 bash -c "$show") || fail "weft-run -np 2 failed"
while read -r rank cpus; do
  [ "$cpus" = "$mine" ] || fail "default: rank $rank runs on '$cpus', the launcher on '$mine'"
done <<< "$out"

if [ "$ncpu" -ge 2 ]; then
  out=$("$run" -np 2 --bind core bash -c "$show") || fail "--bind core failed"
  cpus=$(awk '{print $2}' <<< "$out" | sort -u)
  [ "$(wc -l <<< "$cpus")" -eq 2 ] || fail "--bind core: ranks share CPUs: $out"
  grep -q '[,-]' <<< "$cpus" && fail "--bind core: a rank has more than one CPU: $out"
else
  echo "one CPU: --bind core with 2 ranks is not checked"
fi
# More ranks than CPUs: auto binds nothing.
out=$("$run" -np $((ncpu + 1)) --bind auto bash -c "$show") || fail "--bind auto failed"
while read -r rank cpus; do
  [ "$cpus" = "$mine" ] || fail "auto with more ranks than CPUs bound rank $rank to '$cpus'"
done <<< "$out"
"$run" -np 2 --bind sideways true 2>/dev/null
[ $? -eq 2 ] || fail "--bind sideways was not a usage error"
echo PASS
