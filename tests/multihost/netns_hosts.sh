#!/bin/bash
# netns_hosts.sh: emulate several hosts on one Linux machine with network
# namespaces, and run weft ranks on them.
#
# Layout for H hosts (all names carry a unique tag, so parallel runs never
# collide; nothing is created in the caller's namespace):
#
#   namespace <tag>-sw    bridge "sw0" (the switch), ports p0 .. p<H-1>
#   namespace <tag>-h<i>  interface "mhv<i>" = 10.77.0.<i+1>/24, veth peer of p<i>;
#                         lo is up (as on a real host), no default route;
#                         with --decoy also, listed first, "mgmt0" =
#                         10.77.<100+i>.1/24 that no other host can reach
#                         (a management network)
#
# Link shaping (delay, rate, loss) sits on the switch ports, on the egress
# towards each host: a packet from host a to host b is shaped once, at p<b>
# (one-way delay D, RTT 2D; rate R = what host b can receive). With `tc netem`
# the three are emulated as asked. Kernels without netem (sch_netem) get: no
# delay (said in the set-up line), the rate from `tbf`, and loss as tail
# drops of a tbf port with a shallow buffer (real drops that the senders must
# retransmit, but bursty and of no set percentage): MH_DELAY_MODE,
# MH_RATE_MODE and MH_LOSS_MODE say what was done. The tbf rate's bucket is
# MH_TBF_BURST (default 64kb). A delay without netem: mh_use_switch (below).
#
# Use it from a test (source it) or by hand (run it):
#
#   tests/multihost/netns_hosts.sh check
#   tests/multihost/netns_hosts.sh run --hosts 2 --ranks-per-host 2 [--delay 2ms]
#       [--rate 500mbit] [--loss 1%] [--decoy] [--timeout 60] [--log-dir DIR] [--env K=V]...
#       -- build/all_reduce_perf -b 8 -e 4M -f 8 -c 1
#   tests/multihost/netns_hosts.sh up --name demo --hosts 3 [--delay ..] [--rate ..] [--loss ..] [--decoy]
#   ip netns exec demo-h1 bash            # look around host 1
#   tests/multihost/netns_hosts.sh down --name demo
#
# `run` launches rank r on host r / ranks-per-host, inside its namespace, as
#   ip netns exec <tag>-h<i> timeout -k 5 <timeout> env WEFT_HOSTID=host<i>
#     WEFT_SOCKET_IFNAME=mhv<i> WEFT_RANK=r WEFT_NRANKS=n WEFT_LOCAL_RANK=l
#     WEFT_COMM_ID=10.77.0.1:<port> <program> [args]
# (rank 0 runs the bootstrap root on host 0), waits for every rank, prints
# each exit status and exits with the first failure's status (0 when all
# passed). Logs: <log-dir>/rank<r>.log (stdout and stderr of the rank).
#
# Functions for tests (after `source netns_hosts.sh`):
#   mh_check               0 when namespaces and veths work; else prints why to
#                          stderr and returns 77 (the ctest skip code)
#   mh_check_shaping       the same for tc with netem or tbf
#   mh_setup H [--delay D] [--rate R] [--loss P] [--decoy]   create the hosts, arm an EXIT trap
#   mh_launch R TIMEOUT_S LOGDIR [K=V ...] -- PROGRAM [ARGS]   start R ranks per host
#                          (R = "3,1": one count per host, ranks numbered host by host)
#   mh_wait                wait for every launched rank; MH_RC[r], MH_END_MS[r]
#                          (also in LOGDIR/rank<r>.status), MH_RANK_HOST[r]
#   mh_kill_host I         SIGKILL every process of host I
#   mh_unplug_host I       take host I's switch port down (cable pulled)
#   mh_use_switch BIN DELAY_US   replace the bridge by the userspace switch
#                          (tests/faults/lossy_switch: a one-way delay of DELAY_US
#                          per crossing, for kernels without netem); the ports'
#                          tc shaping stays; MH_SWITCH_PID, log MH_SWITCH_LOG
#   mh_stop_switch         SIGTERM it; prints its counters line
#   mh_teardown            kill what is left, delete the namespaces (the trap runs it)
#   mh_ns I, mh_if I, mh_addr I, mh_sw   names and addresses
#   mh_port_bytes I        bytes host I has sent into the switch
#   mh_retrans I           TCP segments host I has retransmitted
#   mh_now_ms              a clock in milliseconds
# Traffic never leaves these namespaces: 10.77.0.0/24 exists only inside them.

MH_SKIP=77
MH_SUBNET=10.77.0
MH_SUBNET_DECOY=10.77   # --decoy: host i also has mgmt0 = 10.77.<100+i>.1/24, reachable by nobody
MH_PORT=${MH_PORT:-29500}   # namespaces have their own port space: no clash with anything
MH_TAG=""
MH_HOSTS=0
MH_LOSS_MODE=none
MH_DELAY_MODE=none
MH_RATE_MODE=none
MH_PIDS=()
MH_RANK_HOST=()
MH_RC=()
MH_END_MS=()
MH_KEEP=0
MH_LOGDIR=""
MH_HAVE_NETEM=""   # probed at the first shaped port

mh_log() { echo "netns_hosts: $*" >&2; }
mh_now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
mh_ns() { echo "$MH_TAG-h$1"; }
mh_if() { echo "mhv$1"; }
mh_addr() { echo "$MH_SUBNET.$(( $1 + 1 ))"; }
mh_sw() { echo "$MH_TAG-sw"; }

# Can this machine do it? Prints the reason and returns 77 when not.
mh_check() {
  if [ "$(id -u)" != 0 ]; then
    mh_log "SKIP: needs root (network namespaces and veth pairs); running as uid $(id -u)"
    return $MH_SKIP
  fi
  local tool
  for tool in ip timeout; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      mh_log "SKIP: '$tool' not found (ip comes with iproute2, timeout with coreutils)"
      return $MH_SKIP
    fi
  done
  local probe="weftmh-probe-$$-$RANDOM" err
  if ! err=$(ip netns add "$probe" 2>&1); then
    mh_log "SKIP: cannot create a network namespace: $err"
    return $MH_SKIP
  fi
  local ok=0
  if ! err=$(ip netns exec "$probe" true 2>&1); then
    mh_log "SKIP: cannot enter a network namespace (ip netns exec): $err"
    ok=$MH_SKIP
  elif ! err=$(ip -n "$probe" link add pa type veth peer name pb 2>&1); then
    mh_log "SKIP: cannot create a veth pair: $err"
    ok=$MH_SKIP
  elif ! err=$(ip -n "$probe" link add sw0 type bridge 2>&1); then
    mh_log "SKIP: cannot create a bridge: $err"
    ok=$MH_SKIP
  fi
  ip netns del "$probe" 2>/dev/null
  return $ok
}

# Does the kernel have qdisc $1? Probed on a dummy veth in namespace $2.
mh_have_qdisc() {
  local ns=$1 kind=$2 args
  case "$kind" in
    netem) args="netem delay 1ms" ;;
    tbf) args="tbf rate 100mbit burst 64kb latency 50ms" ;;
  esac
  ip -n "$ns" link add mhprobe0 type veth peer name mhprobe1 2>/dev/null || return 1
  local rc=0
  ip netns exec "$ns" tc qdisc add dev mhprobe0 root $args 2>/dev/null || rc=1
  ip -n "$ns" link del mhprobe0 2>/dev/null
  return $rc
}

# Can links be shaped (tc, and netem or at least tbf)? 77 with the reason if not.
mh_check_shaping() {
  if ! command -v tc >/dev/null 2>&1; then
    mh_log "SKIP: 'tc' not found (iproute2): links cannot be shaped"
    return $MH_SKIP
  fi
  local ns="weftmh-probe-$$-$RANDOM" rc=$MH_SKIP
  ip netns add "$ns" 2>/dev/null || { mh_log "SKIP: cannot create a network namespace"; return $MH_SKIP; }
  if mh_have_qdisc "$ns" netem || mh_have_qdisc "$ns" tbf; then rc=0
  else mh_log "SKIP: the kernel has neither the netem nor the tbf qdisc: links cannot be shaped"; fi
  ip netns del "$ns" 2>/dev/null
  return $rc
}

# What a script that runs ranks over shaped links checks first (77 with the
# reason if it cannot), and the WEFT_ settings of its caller cleared so the
# ranks get only what the script gives them.
mh_preflight_shaped() {
  mh_check || return $?
  mh_check_shaping || return $?
  unset ${!WEFT_@}
}

mh_netem_available() {
  local ns="weftmh-probe-$$-$RANDOM" rc
  ip netns add "$ns" 2>/dev/null || return 1
  mh_have_qdisc "$ns" netem
  rc=$?
  ip netns del "$ns" 2>/dev/null
  return $rc
}

# Shapes switch port p$1 (egress towards host $1).
mh_shape_port() {
  local i=$1 delay=$2 rate=$3 loss=$4 sw
  sw=$(mh_sw)
  [ -z "$delay$rate$loss" ] && return 0
  command -v tc >/dev/null 2>&1 || { mh_log "tc not found (iproute2): cannot shape links"; return 1; }
  if [ -z "$MH_HAVE_NETEM" ]; then
    MH_HAVE_NETEM=0
    mh_have_qdisc "$sw" netem && MH_HAVE_NETEM=1
  fi
  if [ "$MH_HAVE_NETEM" = 1 ]; then
    local args=()
    [ -n "$delay" ] && args+=(delay "$delay")
    [ -n "$loss" ] && args+=(loss "$loss")
    [ -n "$rate" ] && args+=(rate "$rate")
    # A queue deep enough for the delay-bandwidth product (1000 packets
    # would drop at a few ms of delay and high rates).
    args+=(limit 10000)
    ip netns exec "$sw" tc qdisc add dev "p$i" root netem "${args[@]}" || return 1
    [ -n "$delay" ] && MH_DELAY_MODE="netem delay $delay"
    [ -n "$loss" ] && MH_LOSS_MODE="netem loss $loss"
    [ -n "$rate" ] && MH_RATE_MODE="netem rate $rate"
    return 0
  fi
  [ -n "$delay" ] && MH_DELAY_MODE="not emulated (no netem in this kernel)"
  if [ -n "$loss" ]; then
    # Tail drops: a slow port with a shallow buffer. TCP bursts overflow it
    # and the senders must retransmit (at 200 Mbit/s about 1% of the packets
    # of a small perf sweep were dropped on the machine this was tuned on;
    # the tests read the drop and retransmit counters rather than trust it).
    ip netns exec "$sw" tc qdisc add dev "p$i" root tbf rate "${rate:-200mbit}" burst 16kb limit 512kb || return 1
    MH_LOSS_MODE="tail drops (tbf rate ${rate:-200mbit}, 512 KB buffer; no netem in this kernel)"
    MH_RATE_MODE="tbf rate ${rate:-200mbit}"
  elif [ -n "$rate" ]; then
    # The bucket (MH_TBF_BURST, 64 KB by default) lets that much through at
    # the veth's speed after an idle moment: messages up to about its size
    # go faster than the rate.
    ip netns exec "$sw" tc qdisc add dev "p$i" root tbf rate "$rate" burst "${MH_TBF_BURST:-64kb}" latency 200ms || return 1
    MH_RATE_MODE="tbf rate $rate"
  fi
  return 0
}

# Removes namespaces left by runs that were killed before their EXIT trap
# ran (a SIGKILLed test): named weftmh-<pid>-... or weftmh-probe-<pid>-...
# with that pid gone, and with no process left inside (a rank still there
# ends by its own timeout; the next sweep takes the namespace).
mh_sweep_stale() {
  local name pid
  for name in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E '^weftmh-(probe-)?[0-9]+-'); do
    pid=${name#weftmh-}
    pid=${pid#probe-}
    pid=${pid%%-*}
    [ -d "/proc/$pid" ] && continue
    [ -n "$(ip netns pids "$name" 2>/dev/null)" ] && continue
    ip netns del "$name" 2>/dev/null && mh_log "removed stale namespace $name (its run, pid $pid, is gone)"
  done
}

# mh_setup H [--delay D] [--rate R] [--loss P] [--decoy]
mh_setup() {
  local hosts=$1 delay="" rate="" loss="" decoy=0
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --decoy) decoy=1; shift ;;
      --delay) delay=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      *) mh_log "mh_setup: unknown option $1"; return 2 ;;
    esac
  done
  if [ "$hosts" -lt 1 ] || [ "$hosts" -gt 200 ]; then mh_log "mh_setup: 1..200 hosts"; return 2; fi
  [ -n "$MH_TAG" ] || MH_TAG="weftmh-$$-$RANDOM"
  mh_sweep_stale
  MH_HOSTS=$hosts
  [ "$MH_KEEP" = 1 ] || trap 'mh_teardown' EXIT
  trap 'exit 130' INT TERM
  local sw
  sw=$(mh_sw)
  ip netns add "$sw" || return 1
  ip -n "$sw" link add sw0 type bridge || return 1
  ip -n "$sw" link set sw0 up || return 1
  local i ns
  for (( i = 0; i < hosts; i++ )); do
    ns=$(mh_ns "$i")
    ip netns add "$ns" || return 1
    if [ "$decoy" = 1 ]; then
      # A "management" interface that comes first (lower index) and leads
      # nowhere the other hosts can reach, as on many real machines.
      ip -n "$ns" link add mgmt0 type veth peer name mgmt1 || return 1
      ip -n "$ns" addr add "$MH_SUBNET_DECOY.$(( 100 + i )).1/24" dev mgmt0 || return 1
      ip -n "$ns" link set mgmt1 up || return 1
      ip -n "$ns" link set mgmt0 up || return 1
    fi
    # Both ends are created inside namespaces: no name ever appears in the
    # caller's namespace, where it could clash with a parallel run.
    ip -n "$sw" link add "p$i" type veth peer name "$(mh_if "$i")" netns "$ns" || return 1
    ip -n "$sw" link set "p$i" master sw0 || return 1
    ip -n "$sw" link set "p$i" up || return 1
    ip -n "$ns" link set lo up || return 1
    ip -n "$ns" addr add "$(mh_addr "$i")/24" dev "$(mh_if "$i")" || return 1
    ip -n "$ns" link set "$(mh_if "$i")" up || return 1
    mh_shape_port "$i" "$delay" "$rate" "$loss" || { mh_log "tc failed on p$i"; return 1; }
  done
  # Wait until every host reaches host 0 (the bridge needs a moment). A
  # one-shot TCP probe is avoided: bash's /dev/tcp would do, but ping is
  # not on every machine, so neighbours are checked instead.
  local deadline=$(( $(mh_now_ms) + 5000 ))
  while :; do
    local up=0
    for (( i = 0; i < hosts; i++ )); do
      ip -n "$(mh_ns "$i")" link show "$(mh_if "$i")" 2>/dev/null | grep -q "state UP" && up=$(( up + 1 ))
    done
    [ "$up" = "$hosts" ] && break
    [ "$(mh_now_ms)" -gt "$deadline" ] && { mh_log "links did not come up"; return 1; }
    sleep 0.05
  done
  mh_log "$hosts host(s) up: namespaces $MH_TAG-h0..$(( hosts - 1 )), subnet $MH_SUBNET.0/24; delay: $MH_DELAY_MODE; rate: $MH_RATE_MODE; loss: $MH_LOSS_MODE"
}

# mh_launch RANKS_PER_HOST TIMEOUT_S LOGDIR [K=V ...] -- PROGRAM [ARGS]
mh_launch() {
  local per=$1 timeout_s=$2 logdir=$3
  shift 3
  local extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do extra+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || { mh_log "mh_launch: no program"; return 2; }
  mkdir -p "$logdir"
  # PER: ranks on every host, or one count per host ("3,1": uneven hosts).
  local -a sizes=()
  if [[ $per == *,* ]]; then
    IFS=, read -ra sizes <<<"$per"
    [ ${#sizes[@]} = "$MH_HOSTS" ] || { mh_log "mh_launch: $per names ${#sizes[@]} hosts, not $MH_HOSTS"; return 2; }
  else
    for (( h = 0; h < MH_HOSTS; h++ )); do sizes+=("$per"); done
  fi
  local n=0 r h local_rank
  for h in "${sizes[@]}"; do n=$(( n + h )); done
  MH_PIDS=()
  MH_RANK_HOST=()
  MH_RC=()
  MH_END_MS=()
  h=0 local_rank=0
  for (( r = 0; r < n; r++ )); do
    while [ "$local_rank" -ge "${sizes[h]}" ]; do h=$(( h + 1 )) local_rank=0; done
    MH_RANK_HOST[r]=$h
    # The subshell stays in this namespace: it outlives a killed host and
    # records how and when its rank ended (status file: "<exit> <ms>").
    rm -f "$logdir/rank$r.status"
    (
      ip netns exec "$(mh_ns "$h")" timeout -k 5 "$timeout_s" env \
        WEFT_HOSTID="host$h" WEFT_SOCKET_IFNAME="$(mh_if "$h")" \
        WEFT_RANK=$r WEFT_NRANKS=$n WEFT_LOCAL_RANK=$local_rank \
        WEFT_COMM_ID="$(mh_addr 0):$MH_PORT" "${extra[@]}" "$@" >"$logdir/rank$r.log" 2>&1
      echo "$? $(mh_now_ms)" >"$logdir/rank$r.status"
    ) 2>>"$logdir/rank$r.log" &
    MH_PIDS[r]=$!
    local_rank=$(( local_rank + 1 ))
  done
  MH_LOGDIR=$logdir
}

# Waits for every launched rank; fills MH_RC[r] (exit status; 124 = its
# timeout expired, 137 = killed) and MH_END_MS[r]. Returns how many ranks
# exited non-zero.
mh_wait() {
  local r failed=0 st
  wait "${MH_PIDS[@]}" 2>/dev/null
  for r in "${!MH_PIDS[@]}"; do
    st=$(cat "$MH_LOGDIR/rank$r.status" 2>/dev/null)
    MH_RC[r]=${st%% *}
    MH_END_MS[r]=${st##* }
    [ -n "${MH_RC[r]}" ] || { MH_RC[r]=255; MH_END_MS[r]=$(mh_now_ms); }
    [ "${MH_RC[r]}" != 0 ] && failed=$(( failed + 1 ))
  done
  return $failed
}

mh_kill_host() {
  local ns pids
  ns=$(mh_ns "$1")
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  return 0
}

mh_unplug_host() { ip -n "$(mh_sw)" link set "p$1" down; }

# Bytes host $1 has sent into the switch (received on its port).
mh_port_bytes() { ip netns exec "$(mh_sw)" cat "/sys/class/net/p$1/statistics/rx_bytes" 2>/dev/null || echo 0; }

# TCP segments host $1 retransmitted.
mh_retrans() {
  ip netns exec "$(mh_ns "$1")" awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["RetransSegs"] }' /proc/net/snmp 2>/dev/null || echo 0
}

mh_use_switch() {
  local bin=$1 delay_us=$2 sw i ports=()
  sw=$(mh_sw)
  [ -x "$bin" ] || { mh_log "mh_use_switch: $bin is not built"; return 1; }
  for (( i = 0; i < MH_HOSTS; i++ )); do
    ip -n "$sw" link set "p$i" nomaster || return 1
    ports+=("p$i")
  done
  MH_SWITCH_LOG=$(mktemp /tmp/weft-switch.XXXXXX)
  ip netns exec "$sw" "$bin" --delay-us "$delay_us" 0 "${ports[@]}" >"$MH_SWITCH_LOG" 2>&1 &
  MH_SWITCH_PID=$!
  sleep 0.2
  kill -0 "$MH_SWITCH_PID" 2>/dev/null || { mh_log "the switch did not start: $(cat "$MH_SWITCH_LOG")"; return 1; }
  MH_DELAY_MODE="userspace switch, $delay_us us one way"
}

mh_stop_switch() {
  [ -n "${MH_SWITCH_PID:-}" ] || return 0
  kill -TERM "$MH_SWITCH_PID" 2>/dev/null
  # Its counters line is polled for, not only waited for: inside $( ) the
  # switch is no child of ours, wait returns at once (and kill -0 succeeds
  # on it as a zombie).
  local i
  for (( i = 0; i < 100; i++ )); do
    grep -q "frames" "$MH_SWITCH_LOG" 2>/dev/null && break
    kill -0 "$MH_SWITCH_PID" 2>/dev/null || break
    sleep 0.05
  done
  wait "$MH_SWITCH_PID" 2>/dev/null
  cat "$MH_SWITCH_LOG"
  rm -f "$MH_SWITCH_LOG"
  MH_SWITCH_PID=""
}

mh_teardown() {
  [ -n "$MH_TAG" ] || return 0
  local i ns pids
  # A switch started in the switch namespace (mh_use_switch or by hand).
  pids=$(ip netns pids "$(mh_sw)" 2>/dev/null)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  MH_SWITCH_PID=""
  for (( i = 0; i < MH_HOSTS; i++ )); do
    ns=$(mh_ns "$i")
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  done
  for (( i = 0; i < MH_HOSTS; i++ )); do ip netns del "$(mh_ns "$i")" 2>/dev/null; done
  ip netns del "$(mh_sw)" 2>/dev/null
  MH_TAG=""
  MH_HOSTS=0
  MH_DELAY_MODE=none
}

# ---------------------------------------------------------------- by hand
mh_usage() {
  sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

mh_main() {
  set -u
  local cmd=${1:-}
  [ -n "$cmd" ] || mh_usage
  shift
  local hosts=2 per=1 timeout_s=60 logdir="" name="" shape=() env_extra=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --hosts) hosts=$2; shift 2 ;;
      --ranks-per-host) per=$2; shift 2 ;;
      --timeout) timeout_s=$2; shift 2 ;;
      --log-dir) logdir=$2; shift 2 ;;
      --name) name=$2; shift 2 ;;
      --port) MH_PORT=$2; shift 2 ;;
      --delay|--rate|--loss) shape+=("$1" "$2"); shift 2 ;;
      --decoy) shape+=("$1"); shift ;;
      --env) env_extra+=("$2"); shift 2 ;;
      --) shift; break ;;
      -h|--help) mh_usage ;;
      *) mh_log "unknown option $1"; mh_usage ;;
    esac
  done
  case "$cmd" in
    check)
      mh_check || exit $?
      if mh_netem_available; then echo "namespaces, veth, bridge: ok; netem: ok"
      else echo "namespaces, veth, bridge: ok; netem: not available (no delay; rate and loss via tbf)"; fi
      ;;
    up)
      [ -n "$name" ] || { mh_log "up needs --name"; exit 2; }
      mh_check || exit $?
      MH_TAG=$name
      MH_KEEP=1
      mh_setup "$hosts" "${shape[@]}" || { mh_teardown; exit 1; }
      local i
      for (( i = 0; i < hosts; i++ )); do
        echo "host $i: ip netns exec $(mh_ns "$i") ...  interface $(mh_if "$i") $(mh_addr "$i")"
      done
      echo "remove with: $0 down --name $name"
      ;;
    down)
      [ -n "$name" ] || { mh_log "down needs --name"; exit 2; }
      MH_TAG=$name
      # Count the hosts that exist rather than trusting --hosts.
      MH_HOSTS=0
      while ip netns list | grep -q "^$name-h$MH_HOSTS\b"; do MH_HOSTS=$(( MH_HOSTS + 1 )); done
      mh_teardown
      ;;
    run)
      [ $# -ge 1 ] || mh_usage
      mh_check || exit $?
      [ -n "$logdir" ] || logdir=$(mktemp -d /tmp/weft-multihost.XXXXXX)
      mh_setup "$hosts" "${shape[@]}" || exit 1
      local start
      start=$(mh_now_ms)
      mh_launch "$per" "$timeout_s" "$logdir" "${env_extra[@]}" -- "$@"
      mh_wait
      local status=0 r
      for r in "${!MH_RC[@]}"; do
        echo "rank $r (host ${MH_RANK_HOST[r]}): exit ${MH_RC[r]} after $(( MH_END_MS[r] - start )) ms, log $logdir/rank$r.log"
        [ "${MH_RC[r]}" -ne 0 ] && [ "$status" -eq 0 ] && status=${MH_RC[r]}
      done
      exit "$status"
      ;;
    *) mh_usage ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  mh_main "$@"
fi
