#!/bin/bash
# The hierarchical algorithm end to end over namespace hosts: 2 hosts x 2
# ranks and the uneven 3 + 1 layout. AllReduce, ReduceScatter and AllGather
# run with WEFT_ALGO=hier and checking (0 wrong values), every call's COLL
# line names hier, and the bytes crossed the switch. On 2 x 2 the selector
# (no WEFT_ALGO) is also asked: its choice for the largest AllReduce is
# printed, not checked (it depends on the measured link costs).
#
#   hierarchical.sh <directory of the perf binaries>
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
source "$here/checks.sh"
bindir=${1:?usage: hierarchical.sh <directory of the perf binaries>}

mh_check || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-multihost-hier.XXXXXX)
mh_setup 2 || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT

for layout in 2 3,1; do
  for coll in all_reduce reduce_scatter all_gather; do
    bin="$bindir/${coll}_perf"
    [ -x "$bin" ] || { mh_fail "$bin not built"; continue; }
    dir="$logroot/$coll-${layout/,/+}"
    before=$(( $(mh_port_bytes 0) + $(mh_port_bytes 1) ))
    start=$(mh_now_ms)
    mh_launch "$layout" 40 "$dir" WEFT_ALGO=hier WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=COLL WEFT_TIMEOUT_MS=20000 \
      -- "$bin" -b 8 -e 4M -f 8 -n 3 -w 1 -c 1 -T 30
    mh_wait
    took=$(( $(mh_now_ms) - start ))
    crossed=$(( $(mh_port_bytes 0) + $(mh_port_bytes 1) - before ))
    nfail=${#MH_FAILURES[@]}
    mh_check_perf_ok "$dir"
    calls=$(grep -h " weft INFO [A-Za-z]* count [0-9]* .*: " "$dir"/rank*.log | grep -vc ": hier, ")
    hier=$(cat "$dir"/rank*.log | grep -c " weft INFO [A-Za-z]* count [0-9]* .*: hier, ")
    [ "${hier:-0}" -gt 0 ] || mh_fail "$coll on $layout: no COLL line chose hier"
    [ "$calls" = 0 ] || mh_fail "$coll on $layout: $calls call(s) ran another algorithm than hier"
    [ "$crossed" -gt $(( 1 << 20 )) ] || mh_fail "$coll on $layout: only $crossed bytes crossed the switch"
    echo "$coll, hosts of $layout ranks: ${took} ms, ranks exit ${MH_RC[*]}, $hier calls ran hier," \
         "$crossed bytes through the switch"
    grep -E "^ +2097152 " "$dir/rank0.log" | head -1 | sed 's/^ */  2 MiB: /'
    [ ${#MH_FAILURES[@]} -gt "$nfail" ] && mh_show_logs "$dir"
  done
done

dir="$logroot/selector"
mh_launch 2 40 "$dir" WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=COLL WEFT_TIMEOUT_MS=20000 \
  -- "$bindir/all_reduce_perf" -b 8 -e 4M -f 8 -n 3 -w 1 -c 1 -T 30
mh_wait
mh_check_perf_ok "$dir"
echo "selector on 2 x 2, no WEFT_ALGO:"
grep -h " weft INFO AllReduce count " "$dir/rank0.log" | sed 's/.* weft INFO AllReduce //' | sort -u | sort -k2,2n |
  sed 's/^/  AllReduce /'
mh_finish
