#!/bin/bash
# Packet loss between namespace hosts (netem loss 2%; without netem, tail
# drops of a shallow 200 Mbit/s switch port): TCP retransmits, AllReduce
# results stay correct and the run ends within its bound. The hosts' TCP
# retransmit counters prove that loss really happened (a run that dropped
# nothing under the tail-drop fallback is reported as a skip, not a pass).
#
#   loss.sh <directory of the perf binaries>
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
source "$here/checks.sh"
bindir=${1:?usage: loss.sh <directory of the perf binaries>}

mh_check || exit $?
mh_check_shaping || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-multihost-loss.XXXXXX)
hosts=3 bound_s=30
mh_setup $hosts --loss 2% || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT
[ "$MH_HAVE_NETEM" = 1 ] || echo "NOTE: netem is not available in this kernel: loss is emulated as $MH_LOSS_MODE"

declare -a before
for (( i = 0; i < hosts; i++ )); do before[i]=$(mh_retrans $i); done
dir="$logroot/all_reduce"
start=$(mh_now_ms)
mh_launch 1 $(( bound_s + 10 )) "$dir" WEFT_DEBUG=WARN WEFT_TIMEOUT_MS=20000 \
  -- "$bindir/all_reduce_perf" -b 8 -e 4M -f 8 -n 3 -w 1 -c 1 -T $bound_s
mh_wait
took=$(( $(mh_now_ms) - start ))
retrans=0
for (( i = 0; i < hosts; i++ )); do retrans=$(( retrans + $(mh_retrans $i) - before[i] )); done
drops=$(ip netns exec "$(mh_sw)" tc -s qdisc show | awk '/dropped/ { sub(/,/, "", $7); d += $7 } END { print d + 0 }')
echo "all_reduce_perf on $hosts hosts with loss: $took ms, ranks exit ${MH_RC[*]}; $drops packets dropped at the switch, $retrans TCP segments retransmitted"
mh_check_perf_ok "$dir"
[ "$took" -le $(( bound_s * 1000 )) ] || mh_fail "the run took $took ms (bound ${bound_s} s)"
if [ "$retrans" -eq 0 ]; then
  if [ "$MH_HAVE_NETEM" = 1 ]; then mh_fail "no TCP retransmission: the netem loss did not apply"
  elif [ ${#MH_FAILURES[@]} -eq 0 ]; then
    echo "SKIP: the tail-drop fallback dropped nothing on this run: loss was not exercised"
    exit $MH_SKIP
  fi
fi
[ ${#MH_FAILURES[@]} -gt 0 ] && mh_show_logs "$dir"
mh_finish
