#!/bin/bash
# Simulated against measured: AllReduce over namespace hosts with shaped
# links (tests/multihost/netns_hosts.sh; needs root), the same
# configurations through weft-sim, one table row per layout, rate, size and
# algorithm (times in ms, the ratio simulated / measured). Keep it short:
# the perf runs share the machine's cores with the ranks.
#
#   tools/weft-sim/validate.sh [BUILD_DIR]
#
# Environment: VALIDATE_CONFIGS ("hosts:ranks_per_host:mbit ..."), VALIDATE_ALGOS
# (ring tree hier), VALIDATE_SIZES (-b/-e/-f of all_reduce_perf), VALIDATE_ITERS,
# and the model's constants for this machine: SIM_INTRA_GBS, SIM_INTRA_LAT_US,
# SIM_NET_LAT_US, SIM_STEP_US, SIM_NET_EFF (TCP's share of the shaped rate).
# VALIDATE_DELAY_US (default 0: the kernel's bridge): the userspace switch
# (tests/faults/lossy_switch, for kernels without netem) replaces the bridge
# and holds every frame that long; a transfer between two hosts crosses the
# switch once, so weft-sim's network latency is SIM_NET_LAT_US + the delay.
set -u
source "$(dirname "$0")/shaped_env.sh" "${1:-}" || exit $?

configs=${VALIDATE_CONFIGS:-"2:1:1000 2:2:1000 4:1:500"}
algos=${VALIDATE_ALGOS:-"ring tree hier"}
sizes=${VALIDATE_SIZES:-"-b 1M -e 16M -f 4"}
iters=${VALIDATE_ITERS:-3}
intra_gbs=${SIM_INTRA_GBS:-4} intra_lat=${SIM_INTRA_LAT_US:-5}
net_lat=${SIM_NET_LAT_US:-60} step_us=${SIM_STEP_US:-10} net_eff=${SIM_NET_EFF:-0.93}
delay_us=${VALIDATE_DELAY_US:-0}
switch_bin=$build/tests/faults/lossy_switch
if ! [[ $delay_us =~ ^[0-9]+$ ]]; then echo "validate.sh: VALIDATE_DELAY_US must be a whole number of us, not '$delay_us'" >&2; exit 2; fi
if [ "$delay_us" -gt 0 ] && [ ! -x "$switch_bin" ]; then
  echo "validate.sh: VALIDATE_DELAY_US needs $switch_bin (cmake --build $build --target lossy_switch)" >&2; exit 2
fi
sim_net_lat=$(( net_lat + delay_us ))
logroot=$(mktemp -d /tmp/weft-sim-validate.XXXXXX)
trap 'mh_teardown; rm -rf "$logroot"' EXIT

if [ "$delay_us" -gt 0 ]; then delay_desc="userspace switch, $delay_us us one way (the bridge replaced; tbf rate on its ports)"
else delay_desc="none (the bridge; tbf rate only)"; fi
echo "# delay: $delay_desc; model: intra ${intra_gbs} GB/s ${intra_lat} us," \
     "network ${net_lat} + ${delay_us} us, step ${step_us} us, TCP at ${net_eff} of the rate; load: $(uptime)"
# marks: s = the selector's choice (cost model), S = fastest simulated, M = fastest measured
printf "%-8s %6s %10s %-6s %10s %10s %7s  %s\n" layout Mbit/s size algo sim_ms meas_ms sim/meas marks
for cfg in $configs; do
  IFS=: read -r hosts rph mbit <<< "$cfg"
  mh_setup "$hosts" --rate "${mbit}mbit" || { echo "set-up failed for $cfg"; exit 1; }
  if [ "$delay_us" -gt 0 ]; then mh_use_switch "$switch_bin" "$delay_us" || { echo "switch failed for $cfg"; exit 1; }; fi
  declare -A meas=()
  for algo in $algos; do
    dir="$logroot/$cfg-$algo"
    mh_launch "$rph" 180 "$dir" WEFT_ALGO=$algo WEFT_TIMEOUT_MS=60000 \
      -- "$build/all_reduce_perf" $sizes -n "$iters" -w 1 -c 0
    mh_wait
    [ "${MH_RC[0]:-1}" = 0 ] || { echo "$cfg $algo: rank 0 failed"; tail -5 "$dir/rank0.log"; continue; }
    while read -r size us; do meas[$algo,$size]=$us; done < <(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { print $1, $6 }' "$dir/rank0.log")
  done
  [ "$delay_us" -gt 0 ] && echo "# $cfg: $(mh_stop_switch)"
  mh_teardown
  nic_gbs=$(awk -v m="$mbit" -v e="$net_eff" 'BEGIN { print m / 8000 * e }')
  "$build/tools/weft-sim/weft-sim" --hosts "$hosts" --ranks-per-host "$rph" --nic-gbs "$nic_gbs" \
      --intra-gbs "$intra_gbs" --intra-lat-us "$intra_lat" --net-lat-us "$sim_net_lat" --step-us "$step_us" \
      $sizes --algos "$(echo $algos | tr ' ' ,)" > "$logroot/$cfg.sim"
  declare -A bestsim=() bestmeas=()
  while read -r size us algo sel; do
    m=${meas[$algo,$size]:-}
    [ -n "$m" ] || continue
    b=${bestsim[$size]:-}; [ -z "$b" ] || awk -v x="$us" -v y="${b% *}" 'BEGIN { exit !(x < y) }' && bestsim[$size]="$us $algo"
    b=${bestmeas[$size]:-}; [ -z "$b" ] || awk -v x="$m" -v y="${b% *}" 'BEGIN { exit !(x < y) }' && bestmeas[$size]="$m $algo"
  done < <(awk '!/^#/ { print $1, $4, $9, $10 }' "$logroot/$cfg.sim")
  while read -r size us algo sel; do
    m=${meas[$algo,$size]:-}
    [ -n "$m" ] || continue
    marks="${sel:+s}"
    [ "${bestsim[$size]#* }" = "$algo" ] && marks="${marks}S"
    [ "${bestmeas[$size]#* }" = "$algo" ] && marks="${marks}M"
    awk -v l="${hosts}x${rph}" -v r="$mbit" -v s="$size" -v a="$algo" -v su="$us" -v mu="$m" -v k="$marks" \
      'BEGIN { printf "%-8s %6s %10s %-6s %10.1f %10.1f %7.2f  %s\n", l, r, s, a, su / 1000, mu / 1000, su / mu, k }'
  done < <(awk '!/^#/ { print $1, $4, $9, $10 }' "$logroot/$cfg.sim")
  unset bestsim bestmeas
  unset meas
done
