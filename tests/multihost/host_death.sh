#!/bin/bash
# A host disappears while three namespace hosts x two ranks run AllReduce in
# a loop (tests/multihost/fault_rank.cc: batches of 8 queued on a host stream,
# every result checked). Every rank must end on its own with a clear error,
# never hang, never return a wrong result as a success, and its cleanup
# (weftCommAbort / weftCommDestroy) must return within 10 s:
#
#   host_death.sh <fault_rank> kill     SIGKILL both ranks of host 0 (which
#                                       also ran the bootstrap root). The
#                                       kernel closes their sockets, so the
#                                       survivors must see it at once:
#                                       weftRemoteError ("peer rank N is
#                                       gone", "connection closed"), exit
#                                       within 10 s although WEFT_TIMEOUT_MS
#                                       is 20 s. They clean up with
#                                       weftCommAbort.
#   host_death.sh <fault_rank> unplug   take host 2's switch port down (cable
#                                       pulled; its ranks keep running). No
#                                       FIN or RST crosses, so only the
#                                       timeout can tell: every rank, on both
#                                       sides, must fail with "made no
#                                       progress ... (WEFT_TIMEOUT_MS)" (or a
#                                       remote error) within WEFT_TIMEOUT_MS
#                                       (5 s) + 8 s, then weftCommDestroy.
#   host_death.sh <fault_rank> unplug-fast   the same with WEFT_TIMEOUT_MS at
#                                       60 s and WEFT_SOCKET_DEAD_PEER_S=4:
#                                       TCP keepalive / TCP_USER_TIMEOUT must
#                                       end the lost connections, so every
#                                       rank fails with a remote error within
#                                       15 s, long before the timeout.
#
# It prints how long each rank took to fail after the fault and to clean up.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
source "$here/checks.sh"
usage="usage: host_death.sh <fault_rank binary> kill|unplug|unplug-fast"
prog=${1:?$usage}
mode=${2:?$usage}
case "$mode" in
  kill) victim=0 timeout_ms=20000 bound_ms=10000 cleanup=abort ;;
  unplug) victim=2 timeout_ms=5000 bound_ms=13000 cleanup=destroy ;;
  unplug-fast) victim=2 timeout_ms=60000 bound_ms=15000 cleanup=destroy ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
[ -x "$prog" ] || { echo "$prog: not an executable" >&2; exit 2; }

mh_check || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-multihost-death.XXXXXX)
hosts=3 per=2 n=6
mh_setup $hosts || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT

dir="$logroot/$mode"
# 1 MiB + 4 bytes per AllReduce: ring chunks of unequal sizes, so a piece
# read at the wrong step is caught.
dead_peer=30
[ "$mode" = unplug-fast ] && dead_peer=4
mh_launch $per 45 "$dir" WEFT_DEBUG=WARN WEFT_TIMEOUT_MS=$timeout_ms WEFT_SOCKET_DEAD_PEER_S=$dead_peer \
  -- "$prog" 262145 8 $cleanup 10000 40
deadline=$(( $(mh_now_ms) + 20000 ))
until [ "$(cat "$dir"/rank*.log 2>/dev/null | grep -c ': looping$')" = $n ]; do
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
echo "$mode of host $victim took $(( $(mh_now_ms) - t0 )) ms (times below count from its start)"
mh_wait

lat_min="" lat_max=0
for r in "${!MH_RC[@]}"; do
  h=${MH_RANK_HOST[r]} rc=${MH_RC[r]} after=$(( MH_END_MS[r] - t0 ))
  err=$(grep -m 1 "^rank $r: weft[A-Za-z]* failed: " "$dir/rank$r.log" | cut -c1-220)
  clean=$(grep -m 1 "^rank $r: weftComm[A-Za-z]* returned" "$dir/rank$r.log")
  echo "rank $r (host $h): exit $rc after $after ms${err:+: $err}${clean:+ | $clean}"
  if [ "$mode" = kill ] && [ "$h" = $victim ]; then
    [ "$rc" = 137 ] || mh_fail "rank $r of the killed host exited $rc, not 137 (SIGKILL)"
    continue
  fi
  case "$rc" in
    10) ;;
    11) mh_fail "rank $r: $cleanup took longer than 10 s after the failure" ;;
    12) mh_fail "rank $r: no call failed within 40 s of running" ;;
    13) mh_fail "rank $r: a call returned success with a wrong result" ;;
    124|137) mh_fail "rank $r hung: ended by its timeout (exit $rc)" ;;
    *) mh_fail "rank $r exited $rc" ;;
  esac
  [ "$after" -le "$bound_ms" ] || mh_fail "rank $r took $after ms to exit (bound $bound_ms ms, WEFT_TIMEOUT_MS=$timeout_ms)"
  { [ -n "$lat_min" ] && [ "$lat_min" -le "$after" ]; } || lat_min=$after
  [ "$after" -gt "$lat_max" ] && lat_max=$after
  if grep -q "internal error" "$dir/rank$r.log"; then
    mh_fail "rank $r reports an internal error: $(grep -m 1 'internal error' "$dir/rank$r.log" | cut -c1-200)"
  fi
  if [ "$mode" != unplug ]; then
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
elif [ "$mode" = unplug ]; then
  grep -l "made no progress for $timeout_ms ms (WEFT_TIMEOUT_MS)" "$dir"/rank*.log >/dev/null ||
    mh_fail "no rank logged 'made no progress for $timeout_ms ms (WEFT_TIMEOUT_MS)'"
fi
echo "detection: ranks left $lat_min .. $lat_max ms after the $mode (WEFT_TIMEOUT_MS=$timeout_ms, bound $bound_ms ms)"
[ ${#MH_FAILURES[@]} -gt 0 ] && mh_show_logs "$dir"
mh_finish
