#!/bin/bash
# The userspace switch's one-way delay (tests/faults/lossy_switch.cc
# --delay-us, the stand-in for netem's delay on kernels without it): two
# namespace hosts joined by the switch instead of the bridge, UDP round trips
# at delay 0, 1000 and 2000 us. The round trip crosses the switch twice, so
# its minimum must rise by twice the delay (within -5% and +1.5 ms: the
# minimum of 30 probes on a loaded machine), no probe may be lost and no
# frame dropped by the switch.
#
#   switch_delay.sh <lossy_switch> <udp_rtt>
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
switch=${1:?usage: switch_delay.sh <lossy_switch> <udp_rtt>}
probe=${2:?usage: switch_delay.sh <lossy_switch> <udp_rtt>}
mh_check || exit $?
for b in "$switch" "$probe"; do [ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }; done
mh_setup 2 || { mh_log "set-up failed"; exit 1; }
trap mh_teardown EXIT
ip netns exec "$(mh_ns 1)" "$probe" serve 7000 60 &
servepid=$!

failed=0
declare -A rtt_min=()
for delay in 0 1000 2000; do
  mh_use_switch "$switch" "$delay" || { echo "FAIL: the switch did not start at delay $delay us"; failed=1; continue; }
  out=$(ip netns exec "$(mh_ns 0)" "$probe" ping "$(mh_addr 1)" 7000 30)
  rc=$?
  counters=$(mh_stop_switch)
  echo "delay $delay us: $out"
  echo "  $counters"
  [ $rc = 0 ] || { echo "FAIL: round trips lost at delay $delay us"; failed=1; continue; }
  grep -q "sent 30, answered 30," <<<"$out" || { echo "FAIL: a probe was lost at delay $delay us"; failed=1; }
  grep -q " 0 dropped on a full queue, 0 send errors" <<<"$counters" ||
    { echo "FAIL: the switch dropped frames at delay $delay us"; failed=1; }
  rtt_min[$delay]=$(sed -n 's/.*rtt min\/median\/max \([0-9]*\) .*/\1/p' <<<"$out")
done
for delay in 1000 2000; do
  [ -n "${rtt_min[0]:-}" ] && [ -n "${rtt_min[$delay]:-}" ] || continue
  rise=$(( rtt_min[$delay] - rtt_min[0] ))
  lo=$(( 2 * delay * 95 / 100 )) hi=$(( 2 * delay + 1500 ))
  echo "delay $delay us: minimum round trip rose by $rise us (expected $(( 2 * delay )), accepted $lo..$hi)"
  [ $rise -ge $lo ] && [ $rise -le $hi ] || { echo "FAIL: the round trip did not rise by twice the delay"; failed=1; }
done
kill $servepid; wait $servepid 2>/dev/null
[ $failed = 0 ] && echo "PASS"
exit $failed
