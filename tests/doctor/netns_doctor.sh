#!/usr/bin/env bash
# weft-doctor on three netns hosts of two ranks (tests/multihost/netns_hosts.sh):
# a healthy run saves a baseline; then the link from host1 to host2 is
# shaped slower (only host1's packets on the switch port into host2) and
# host0's ranks run with shared memory disabled, so their pair uses TCP.
# The report must name that link (slow, asymmetric) and that host, and the
# verdict against the baseline must name both and exit 1. The degraded run
# also reads each host's counters from a recorded tree (--sysfs-root
# sysfs/fw/%h) in which host2's NIC firmware differs: the report names host2.
# Needs root and namespaces (exit 77, skipped, otherwise).
#
#   netns_doctor.sh <weft-doctor> <tests/multihost> <tests/doctor/sysfs>
set -u
usage="usage: netns_doctor.sh <weft-doctor> <tests/multihost> <tests/doctor/sysfs>"
doctor=${1:?$usage}
mhdir=${2:?$usage}
trees=${3:?$usage}
source "$mhdir/netns_hosts.sh"
source "$mhdir/checks.sh"

mh_check || exit $?
mh_check_shaping || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-doctor-netns.XXXXXX)
mh_setup 3 || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT
# A wide tolerance: the shaped link loses more than 90%; the others only
# wander with the load of a shared machine.
args=(--sizes 64K,1M --iters 3 --pair-bytes 1M --pair-iters 3 --lat-iters 10 --timeout 60 --tolerance 0.5)
rate=40mbit

start=$(mh_now_ms)
mh_launch 2 75 "$logroot/healthy" WEFT_TIMEOUT_MS=30000 -- "$doctor" "${args[@]}" --save-baseline "$logroot/base.json"
mh_wait
echo "healthy run: $(( $(mh_now_ms) - start )) ms, ranks exit ${MH_RC[*]}"
sed -n '/^transports/,/^sweep/p' "$logroot/healthy/rank0.log"
for r in "${!MH_RC[@]}"; do [ "${MH_RC[r]}" = 0 ] || mh_fail "healthy run: rank $r exited ${MH_RC[r]}"; done
[ -s "$logroot/base.json" ] || { mh_show_logs "$logroot/healthy"; mh_fail "no baseline written"; mh_finish; }

# Only host1 -> host2: an htb qdisc on the switch port into host2 lets
# everything through its fast default class, except host1's packets
# (u32 on the source address), which go to a slow class.
sw=$(mh_sw)
shape() { ip netns exec "$sw" tc "$@" 2>"$logroot/tc.err" || { cat "$logroot/tc.err" >&2; return 1; }; }
if ! { shape qdisc add dev p2 root handle 1: htb default 10 &&
       shape class add dev p2 parent 1: classid 1:10 htb rate 100gbit quantum 60000 &&
       shape class add dev p2 parent 1: classid 1:20 htb rate $rate quantum 1514 &&
       shape filter add dev p2 parent 1: protocol ip prio 1 u32 match ip src "$(mh_addr 1)/32" flowid 1:20; }; then
  mh_log "SKIP: this kernel cannot shape one link alone (tc htb with a u32 filter)"
  exit 77
fi

start=$(mh_now_ms)
mh_launch 2 75 "$logroot/degraded" WEFT_TIMEOUT_MS=30000 -- bash -c \
  '[ "$WEFT_HOSTID" = host0 ] && export WEFT_SHM_DISABLE=1; exec "$@"' doctor \
  "$doctor" "${args[@]}" --baseline "$logroot/base.json" --sysfs-root "$trees/fw/%h"
mh_wait
out="$logroot/degraded/rank0.log"
echo "degraded run (host1 -> host2 at $rate, host0 without shared memory): $(( $(mh_now_ms) - start )) ms," \
     "ranks exit ${MH_RC[*]}"
sed -n '/^bandwidth/,$p' "$out" | grep -v "^ *$"
[ "${MH_RC[0]}" = 1 ] || mh_fail "rank 0 exited ${MH_RC[0]}, expected 1 (regressed)"
for r in "${!MH_RC[@]}"; do [ "${MH_RC[r]}" = "${MH_RC[0]}" ] || mh_fail "rank $r exited ${MH_RC[r]}, rank 0 ${MH_RC[0]}"; done
grep -q "^  - host0: 1 same-host rank pair(s) use Socket, not shared memory (ranks 0 and 1: WEFT_SHM_DISABLE=1" "$out" ||
  mh_fail "the report does not name host0's fallback to TCP"
grep -q "^  - link host1 -> host2: .* GB/s, under half the median link" "$out" ||
  mh_fail "the report does not name the slow link host1 -> host2"
grep -q "^  - link host1 <-> host2 is asymmetric: .*(slow way: host1 -> host2)" "$out" ||
  mh_fail "the report does not name the asymmetric link"
grep -q "^  - host2: mlx5_0 firmware 22.36.1010, the other hosts have 22.39.1002" "$out" ||
  mh_fail "the report does not name host2's firmware (per-host counter trees, --sysfs-root .../%h)"
grep -q "^verdict: REGRESSED" "$out" || mh_fail "no REGRESSED verdict"
grep -q "^  REGRESSED link host1 -> host2: " "$out" || mh_fail "the verdict does not name the link host1 -> host2"
grep -q "^  REGRESSED host0: 1 rank pair(s) now use Socket, baseline SHM" "$out" || mh_fail "the verdict does not name host0"
[ ${#MH_FAILURES[@]} -gt 0 ] && mh_show_logs "$logroot/degraded"
mh_finish
