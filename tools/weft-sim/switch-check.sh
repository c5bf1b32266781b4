#!/bin/bash
# Does the userspace switch (tests/faults/lossy_switch, validate.sh's
# VALIDATE_DELAY_US) cap the rate? Two namespace hosts, each switch port
# shaped to RATE by tbf, once through the kernel's bridge and once through
# the switch at delay CHECK_DELAY_US (0): iperf3 (if installed) and all_reduce_perf, side by
# side, ROUNDS rounds interleaved. Needs root.
#
#   tools/weft-sim/switch-check.sh [BUILD_DIR]
#
# Environment: CHECK_RATES ("100mbit 1000mbit"), CHECK_ROUNDS (3),
# CHECK_SIZES (all_reduce_perf's -b/-e/-f; "-b 1M -e 4M -f 4"), CHECK_DELAY_US
# (0; with a delay, TCP must still fill the rate over the longer round trip).
set -u
source "$(dirname "$0")/shaped_env.sh" "${1:-}" || exit $?
rates=${CHECK_RATES:-"100mbit 1000mbit"}
rounds=${CHECK_ROUNDS:-3}
sizes=${CHECK_SIZES:-"-b 1M -e 4M -f 4"}
delay_us=${CHECK_DELAY_US:-0}
logroot=$(mktemp -d /tmp/weft-switch-check.XXXXXX)
trap 'mh_teardown; rm -rf "$logroot"' EXIT
echo "# switch delay $delay_us us; load: $(uptime)"
for (( round = 1; round <= rounds; round++ )); do
  for rate in $rates; do
    for via in bridge switch; do
      mh_setup 2 --rate "$rate" 2>/dev/null || { echo "set-up failed"; exit 1; }
      [ $via = switch ] && { mh_use_switch "$build/tests/faults/lossy_switch" "$delay_us" || exit 1; }
      line="round $round $rate $via:"
      if command -v iperf3 >/dev/null; then
        ip netns exec "$(mh_ns 1)" iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
        server=$!
        sleep 0.3
        mbit=$(ip netns exec "$(mh_ns 0)" iperf3 -c "$(mh_addr 1)" -p 5201 -t 3 -f m 2>/dev/null |
          awk '/receiver/ { print $7 }')
        line="$line iperf3 ${mbit:-?} Mbit/s;"
        wait $server
      fi
      dir="$logroot/$round-$rate-$via"
      mh_launch 1 120 "$dir" WEFT_TIMEOUT_MS=60000 -- "$build/all_reduce_perf" $sizes -n 3 -w 1 -c 0
      mh_wait
      line="$line all_reduce_perf ms:$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { printf " %s=%.1f", $1, $6 / 1000 }' "$dir/rank0.log")"
      [ $via = switch ] && line="$line; $(mh_stop_switch)"
      echo "$line"
      mh_teardown
    done
  done
done
