#!/bin/bash
# Four namespace hosts x one rank on shaped links (2 ms one-way delay with
# netem, 200 Mbit/s into each host): AllReduce stays correct, every
# connection is NET/Socket on the rank's veth, the selector logs its choice
# (TUNE), and the shaping really applied (the 2 MiB AllReduce is no faster
# than the rate allows; with netem the 8-byte one takes at least two
# one-way delays). Without netem the delay part is skipped with a message.
#
#   shaped_4x1.sh <directory of the perf binaries>
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
source "$here/checks.sh"
bindir=${1:?usage: shaped_4x1.sh <directory of the perf binaries>}

mh_check || exit $?
mh_check_shaping || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-multihost-shaped.XXXXXX)
delay_ms=2 rate_mbit=200
mh_setup 4 --delay ${delay_ms}ms --rate ${rate_mbit}mbit || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT
if [ "$MH_HAVE_NETEM" != 1 ]; then
  echo "NOTE: netem is not available in this kernel: no delay is emulated, the delay check is skipped;" \
       "links are rate-limited with tbf (${rate_mbit} Mbit/s)"
fi

dir="$logroot/all_reduce"
start=$(mh_now_ms)
mh_launch 1 40 "$dir" WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=INIT,NET,BOOTSTRAP,TUNE WEFT_TIMEOUT_MS=20000 \
  -- "$bindir/all_reduce_perf" -b 8 -e 2M -f 8 -n 3 -w 1 -c 1 -T 30
mh_wait
echo "all_reduce_perf on 4 hosts: $(( $(mh_now_ms) - start )) ms, ranks exit ${MH_RC[*]}"
mh_check_perf_ok "$dir"
mh_check_transports "$dir" 1
[ "$MH_SHM_CONNS" = 0 ] || mh_fail "$MH_SHM_CONNS connection(s) via SHM between one-rank hosts"
[ "$MH_NET_CONNS" -gt 0 ] || mh_fail "no NET/Socket connection in the logs"
tune=$(grep -c "weft INFO AllReduce [0-9]* bytes: " "$dir/rank0.log")
[ "$tune" -gt 0 ] || mh_fail "no TUNE line ('AllReduce <n> bytes: <algorithm>, ...') in rank 0's log"
grep -m 1 "weft INFO AllReduce 2097152 bytes: " "$dir/rank0.log" | sed 's/.* weft INFO /selector: /'

# Out-of-place time (us) of one size in rank 0's table.
perf_time() { awk -v size="$1" '$1 == size && $2 ~ /^[0-9]+$/ { print int($6); exit }' "$dir/rank0.log"; }
big=2097152
tbig=$(perf_time $big)
# Every rank must receive at least (n-1)/n of the data in any AllReduce
# algorithm; half of that at the port rate is a safe lower bound.
min_us=$(( big * 3 / 4 * 8 / rate_mbit / 2 ))
if [ -z "$tbig" ]; then mh_fail "no $big-byte row in rank 0's table"
elif [ "$tbig" -lt "$min_us" ]; then mh_fail "$big-byte AllReduce took $tbig us, faster than ${rate_mbit} Mbit/s allows (>= $min_us us): rate limit not applied?"
else echo "rate check: $big-byte AllReduce $tbig us (>= $min_us us at ${rate_mbit} Mbit/s)"; fi
if [ "$MH_HAVE_NETEM" = 1 ]; then
  t8=$(perf_time 8)
  if [ -z "$t8" ] || [ "$t8" -lt $(( 2 * delay_ms * 1000 )) ]; then
    mh_fail "8-byte AllReduce took ${t8:-?} us: less than two one-way delays of $delay_ms ms"
  else echo "delay check: 8-byte AllReduce $t8 us (>= $(( 2 * delay_ms * 1000 )) us)"; fi
fi
[ ${#MH_FAILURES[@]} -gt 0 ] && mh_show_logs "$dir"
mh_finish
