#!/bin/bash
# A host disappears while three namespace hosts x two ranks run AllReduce in
# a loop (all_reduce_perf -N 0: until something fails). Every rank must exit
# on its own with a clear error, never hang:
#
#   host_death.sh <bindir> kill     SIGKILL both ranks of host 0 (which also
#                                   ran the bootstrap root). The kernel closes
#                                   their sockets, so the survivors must see
#                                   it at once: weftRemoteError, "peer rank N
#                                   is gone" / "connection closed", exit
#                                   within 10 s although WEFT_TIMEOUT_MS is
#                                   20 s.
#   host_death.sh <bindir> unplug   take host 2's switch port down (cable
#                                   pulled; its ranks keep running). No FIN
#                                   or RST crosses, so nothing but the
#                                   timeout can tell: every rank, on both
#                                   sides, must fail with "made no progress
#                                   ... (WEFT_TIMEOUT_MS)" (or a remote
#                                   error caused by a peer's exit) within
#                                   WEFT_TIMEOUT_MS (5 s) + 8 s.
#
# It prints how long each rank took to exit after the event. No rank may
# end through its `timeout` (124/137: a hang) or report an internal error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
source "$here/checks.sh"
bindir=${1:?usage: host_death.sh <directory of the perf binaries> kill|unplug}
mode=${2:?usage: host_death.sh <directory of the perf binaries> kill|unplug}
case "$mode" in
  kill) victim=0 timeout_ms=20000 bound_ms=10000 ;;
  unplug) victim=2 timeout_ms=5000 bound_ms=13000 ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac

mh_check || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-multihost-death.XXXXXX)
hosts=3 per=2
mh_setup $hosts || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT

dir="$logroot/$mode"
mh_launch $per 45 "$dir" WEFT_DEBUG=WARN WEFT_TIMEOUT_MS=$timeout_ms \
  -- "$bindir/all_reduce_perf" -b 1M -e 1M -n 10 -w 1 -N 0 -c 0
# Running: rank 0 printed its first result row (every rank is in the loop).
deadline=$(( $(mh_now_ms) + 20000 ))
until grep -q '^ *1048576 ' "$dir/rank0.log" 2>/dev/null; do
  if [ "$(mh_now_ms)" -gt "$deadline" ] || ls "$dir"/rank*.status >/dev/null 2>&1; then
    mh_fail "the job did not get going within 20 s, or a rank ended before the fault"
    mh_show_logs "$dir"
    mh_finish
  fi
  sleep 0.05
done
sleep 0.3
t0=$(mh_now_ms)
if [ "$mode" = kill ]; then mh_kill_host $victim; else mh_unplug_host $victim; fi
t1=$(mh_now_ms)
echo "$mode of host $victim took $(( t1 - t0 )) ms (times below count from its start)"
mh_wait

lat_min="" lat_max=0
for r in "${!MH_RC[@]}"; do
  h=${MH_RANK_HOST[r]} rc=${MH_RC[r]} after=$(( MH_END_MS[r] - t0 ))
  err=$(grep -m 1 '^weft-tests error:' "$dir/rank$r.log" | cut -c1-220)
  echo "rank $r (host $h): exit $rc after $after ms${err:+: $err}"
  if [ "$mode" = kill ] && [ "$h" = $victim ]; then
    [ "$rc" = 137 ] || mh_fail "rank $r of the killed host exited $rc, not 137 (SIGKILL)"
    continue
  fi
  if [ "$rc" = 0 ]; then mh_fail "rank $r exited 0 after host $victim disappeared"; continue; fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then mh_fail "rank $r hung: ended by its timeout (exit $rc)"; continue; fi
  [ "$after" -le "$bound_ms" ] || mh_fail "rank $r took $after ms to exit (bound $bound_ms ms, WEFT_TIMEOUT_MS=$timeout_ms)"
  [ -n "$lat_min" ] && [ "$lat_min" -le "$after" ] || lat_min=$after
  [ "$after" -gt "$lat_max" ] && lat_max=$after
  if grep -q "internal error" "$dir/rank$r.log"; then mh_fail "rank $r reports an internal error: $(grep -m 1 'internal error' "$dir/rank$r.log" | cut -c1-200)"; fi
  if [ "$mode" = kill ]; then
    grep -q "remote process exited or there was a network error" <<<"$err" ||
      mh_fail "rank $r: no weftRemoteError in its error line"
  else
    grep -qE "operation timed out|remote process exited or there was a network error" <<<"$err" ||
      mh_fail "rank $r: neither a timeout nor a remote error in its error line"
  fi
done
if [ "$mode" = kill ]; then
  grep -lE "peer rank [0-9]+ is gone|connection closed" "$dir"/rank*.log >/dev/null ||
    mh_fail "no survivor logged 'peer rank N is gone' or a closed connection"
else
  grep -l "made no progress for $timeout_ms ms (WEFT_TIMEOUT_MS)" "$dir"/rank*.log >/dev/null ||
    mh_fail "no rank logged 'made no progress for $timeout_ms ms (WEFT_TIMEOUT_MS)'"
fi
echo "detection: ranks left $lat_min .. $lat_max ms after the $mode (WEFT_TIMEOUT_MS=$timeout_ms, bound $bound_ms ms)"
[ ${#MH_FAILURES[@]} -gt 0 ] && mh_show_logs "$dir"
mh_finish
