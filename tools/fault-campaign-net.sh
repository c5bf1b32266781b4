# Scenarios of tools/fault-campaign.sh between network-namespace hosts
# (sourced by it): kill-net, linkdown, loss. One rank per host, three hosts,
# sockets only. The hosts are set up once per scenario; every run gets its
# own bootstrap port.

source "$here/tests/multihost/netns_hosts.sh"

net_hosts=3

# net_up SCENARIO: 0 when the namespace hosts are up, else the scenario is
# marked skipped with the reason.
net_up() {
  local why
  if ! why=$(mh_check 2>&1); then R_SKIP[$1]=${why#netns_hosts: }; return 1; fi
  MH_TAG=""
  mh_setup $net_hosts >/dev/null 2>&1 || { R_SKIP[$1]="namespace set-up failed"; mh_teardown; return 1; }
}

# The campaign rank inside host $1's namespace.
net_rank_pid() {
  local p
  for p in $(ip netns pids "$(mh_ns "$1")" 2>/dev/null); do
    [ "$(cat /proc/$p/comm 2>/dev/null)" = "$(basename "$rank_bin" | cut -c1-15)" ] && { echo "$p"; return; }
  done
}

# net_run SCENARIO I LIMIT_S ITERATIONS [K=V ...]: launches one rank per host
# (sizes random) and waits until all loop.
net_run() {
  local s=$1 i=$2 limit=$3 iters=$4
  shift 4
  MH_PORT=$(free_port)
  N_DIR=$out/$s/run$i
  mh_launch 1 "$limit" "$N_DIR" WEFT_DEBUG=WARN WEFT_COMM_SECRET="$(secret)" "$@" -- \
    "$rank_bin" "${N_SIZE:-$(pick_size)}" "$iters" 40 10000 2>/dev/null
  if ! wait_looping "$N_DIR" $net_hosts 20000; then
    mh_wait
    record "$s" other 0 "the job did not start ($(grep -h -m1 failed "$N_DIR"/rank*.log | cut -c1-200))"
    return 1
  fi
}

scenario_kill_net() {
  net_up kill-net || return
  local i victim pid fault
  for (( i = 1; i <= count; i++ )); do
    net_run kill-net $i 40 0 WEFT_TIMEOUT_MS=5000 || continue
    sleep "0.$(printf %03d "$(rand 1000)")"
    victim=$(rand $net_hosts)
    pid=$(net_rank_pid "$victim")
    fault=$(now_ms)
    [ -n "$pid" ] && kill -KILL "$pid"
    mh_wait
    judge_fault kill-net "$N_DIR" $net_hosts "$fault" 7000 "$victim"
  done
  mh_teardown
}

# A host's switch port goes down: no FIN, no RST; every rank (the cut-off
# one too) must fail on its own within WEFT_TIMEOUT_MS (5 s) + 8 s
# (the diagnosis and the socket transport's dead-peer detection).
scenario_linkdown() {
  net_up linkdown || return
  local i victim fault
  for (( i = 1; i <= count; i++ )); do
    net_run linkdown $i 40 0 WEFT_TIMEOUT_MS=5000 || continue
    sleep "0.$(printf %03d "$(rand 1000)")"
    victim=$(rand $net_hosts)
    fault=$(now_ms)
    mh_unplug_host "$victim"
    mh_wait
    ip -n "$(mh_sw)" link set "p$victim" up
    judge_fault linkdown "$N_DIR" $net_hosts "$fault" 13000
  done
  mh_teardown
}

# 5% of frames dropped at random by a userspace switch (this kernel may lack
# netem), switched on mid-loop: 60 verified AllReduces must all succeed
# within 60 s.
scenario_loss() {
  [ -x "$switch_bin" ] || { R_SKIP[loss]="$switch_bin missing"; return; }
  net_up loss || return
  local sw p h
  sw=$(mh_sw)
  for (( h = 0; h < net_hosts; h++ )); do
    ip -n "$sw" link set "p$h" nomaster
    # One segment per frame, so that a drop loses one packet, not a burst.
    ip -n "$(mh_ns $h)" link set "$(mh_if $h)" gso_max_segs 1 2>/dev/null
  done
  local ports=()
  for (( h = 0; h < net_hosts; h++ )); do ports+=("p$h"); done
  local i start took r bad log=$out/loss-switch.log
  for (( i = 1; i <= count; i++ )); do
    ip netns exec "$sw" "$switch_bin" @5 "${ports[@]}" >>"$log" 2>&1 &
    local swpid=$!
    sleep 0.2
    start=$(now_ms)
    if N_SIZE=262145 net_run loss $i 70 60 WEFT_TIMEOUT_MS=20000; then
      kill -USR1 $swpid
      mh_wait
      took=$(( $(now_ms) - start ))
      bad=""
      for (( r = 0; r < net_hosts; r++ )); do
        case "${MH_RC[r]}" in
          0) ;;
          13) bad=wrong ;;
          124|137) [ "$bad" = wrong ] || bad=hang ;;
          *) [ -n "$bad" ] || bad=other ;;
        esac
      done
      if [ -z "$bad" ] && [ $took -gt 60000 ]; then bad=other; fi
      record loss "${bad:-ok}" "$took" "${bad:+ranks exit ${MH_RC[*]} after $took ms}"
      [ -z "$bad" ] && rm -rf "$N_DIR"
    fi
    kill -TERM $swpid; wait $swpid 2>/dev/null
  done
  R_NOTE[loss]="frames dropped: $(awk '{ f += $2; d += $4 } END { printf "%d of %d (%.1f%%)", d, f, f ? 100 * d / f : 0 }' "$log"); max ms = slowest run"
  mh_teardown
}
