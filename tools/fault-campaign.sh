#!/bin/bash
# fault-campaign.sh: inject faults into running weft jobs, many times over,
# and count how each run ended. Figures: docs/reliability.md, "Fault campaign".
#
#   tools/fault-campaign.sh [--build DIR] [--count N] [--scenarios a,b,...]
#                           [--out DIR] [--ranks N]
#
# --count N      runs per scenario (default 100)
# --ports-count N  runs of stray and hostile (default 20: a stray run sends
#                about 13000 connections and takes ~30 s)
# --scenarios    comma-separated, default all:
#   kill-shm     SIGKILL of a random rank at a random moment of a loop of
#                verified AllReduces (tests/faults/campaign_rank.cc), process
#                ranks on this host over shared memory
#   kill-net     the same over sockets between network-namespace hosts
#                (tests/multihost/netns_hosts.sh; root only, else skipped)
#   kill-ibloop  the same over the IB transport on the loopback verbs provider
#   stop-shm     SIGSTOP of a random rank (a straggler): the others must time
#                out naming it
#   linkdown     a namespace host's switch port goes down mid-loop: every
#                rank must fail within WEFT_TIMEOUT_MS + slack
#   loss         5% random frame loss between namespace hosts, switched on
#                mid-loop (tests/faults/lossy_switch.cc replaces the bridge):
#                every result right, within the bound
#   stray        garbage, truncated, replayed and wrong-secret connections,
#                5000 connections in a row and hellos that stall after their
#                header, on the root, rank and socket data listeners, during
#                init and during collectives (tests/faults/fault_peer.cc):
#                all refused, the job's results right
#   hostile      peers with the secret sending out-of-range ranks, sizes and
#                indices on every listener: each refused, no crash, job right
#   fd-limit     ranks under `ulimit -n` of 12..128: success, or an error
#                naming the limit; never a hang or crash
#   shm-limit    shm ranks with a tiny /dev/shm (a private mount namespace with
#                a small tmpfs): success, or an error naming /dev/shm
#
# A run the harness has to kill (its `timeout` ends a rank) is a hang and
# counts as a failure; so does a rank that exits with a result that is
# wrong. Prints one table row per scenario and exits 1 when any run failed.
# Each run's logs stay under --out (default a fresh /tmp directory) when it
# failed.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
count=100
ports_count=20
scenarios=kill-shm,kill-net,kill-ibloop,stop-shm,linkdown,loss,stray,hostile,fd-limit,shm-limit
out=""
nranks=3
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --ports-count) ports_count=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ranks) nranks=$2; shift 2 ;;
    -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "fault-campaign: unknown option $1" >&2; exit 2 ;;
  esac
done
# Absolute: some scenarios run their ranks from another directory or mount
# namespace.
build=$(cd "$build" 2>/dev/null && pwd) || { echo "fault-campaign: no build folder ${build}" >&2; exit 2; }
rank_bin=$build/tests/faults/fault_campaign_rank
peer_bin=$build/tests/faults/fault_peer
switch_bin=$build/tests/faults/lossy_switch
lbv_lib=$build/tests/ib/loopback_verbs/libweft_loopback_verbs.so
for f in "$rank_bin" "$peer_bin"; do
  [ -x "$f" ] || { echo "fault-campaign: $f missing (cmake --build $build --target fault_campaign_rank fault_peer)" >&2; exit 2; }
done
[ -n "$out" ] || out=$(mktemp -d /tmp/weft-fault-campaign.XXXXXX)
mkdir -p "$out"
unset ${!WEFT_@}
export WEFT_SOCKET_IFNAME=lo

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
rand() { echo $(( (RANDOM * 32768 + RANDOM) % $1 )); }
secret() { printf "%04x%04x%04x%04x" $RANDOM $RANDOM $RANDOM $RANDOM; }
# A port below the ephemeral range (outgoing connections never take it) that
# nothing is bound to now.
free_port() {
  python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(10000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
    finally:
        s.close()' 2>/dev/null || echo $(( 10000 + $(rand 22000) ))
}

# ------------------------------------------------------------------ results
declare -A R_RUNS R_OK R_HANG R_WRONG R_OTHER R_MAX R_SKIP R_NOTE
row_init() { R_RUNS[$1]=0 R_OK[$1]=0 R_HANG[$1]=0 R_WRONG[$1]=0 R_OTHER[$1]=0 R_MAX[$1]=0 R_SKIP[$1]="" R_NOTE[$1]=""; }
# record SCENARIO ok|hang|wrong|other [ms] [why]
record() {
  local s=$1 what=$2 ms=${3:-0}
  R_RUNS[$s]=$(( R_RUNS[$s] + 1 ))
  case "$what" in
    ok) R_OK[$s]=$(( R_OK[$s] + 1 )) ;;
    hang) R_HANG[$s]=$(( R_HANG[$s] + 1 )) ;;
    wrong) R_WRONG[$s]=$(( R_WRONG[$s] + 1 )) ;;
    *) R_OTHER[$s]=$(( R_OTHER[$s] + 1 )) ;;
  esac
  [ "$ms" -gt "${R_MAX[$s]}" ] && R_MAX[$s]=$ms
  [ "$what" != ok ] && echo "  run ${R_RUNS[$s]} of $s: $what${4:+: $4}" >&2
  return 0
}

# -------------------------------------------------------------- local ranks
# launch_local DIR N LIMIT_S [K=V ...] -- ARGS: N rank processes on this host,
# each under `timeout` (a rank it ends is a hang). L_PIDS[r]: the timeout's pid.
L_PIDS=()
launch_local() {
  local dir=$1 n=$2 limit=$3
  shift 3
  local env=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  mkdir -p "$dir"
  L_PIDS=()
  local r
  for (( r = 0; r < n; r++ )); do
    rm -f "$dir/rank$r.status"
    (
      [ $r = $(( n - 1 )) ] && [ -n "${L_DELAY_LAST:-}" ] && sleep "$L_DELAY_LAST"
      [ -n "${L_ULIMIT:-}" ] && ulimit -n "$L_ULIMIT"
      ${L_WRAP:-} timeout -k 2 "$limit" env WEFT_RANK=$r WEFT_NRANKS=$n WEFT_LOCAL_RANK=$r "${env[@]}" \
        "$rank_bin" "$@" >"$dir/rank$r.log" 2>&1
      echo "$? $(now_ms)" >"$dir/rank$r.status"
    ) 2>/dev/null &
    L_PIDS[r]=$!
  done
}
# The rank process itself (the child of timeout, under the subshell).
rank_pid() {
  local t
  t=$(pgrep -P "$1" -x timeout | head -1)
  [ -n "$t" ] && pgrep -P "$t" | head -1
}
# wait_looping DIR N BOUND_MS: 0 once every rank printed "looping".
wait_looping() {
  local dir=$1 n=$2 deadline=$(( $(now_ms) + $3 ))
  until [ "$(cat "$dir"/rank*.log 2>/dev/null | grep -c ': looping$')" -ge "$n" ]; do
    [ "$(now_ms)" -gt "$deadline" ] && return 1
    ls "$dir"/rank*.status >/dev/null 2>&1 && return 1
    sleep 0.02
  done
}
rc_of() { local s; s=$(cat "$1/rank$2.status" 2>/dev/null); echo "${s%% *}"; }
failed_at() { grep -m1 -o "failed at [0-9]*" "$1/rank$2.log" 2>/dev/null | awk '{ print $3 }'; }

# judge_fault SCENARIO DIR N FAULT_MS BOUND_MS VICTIMS...: the survivors
# (every rank not in VICTIMS) must exit 10 with their error within BOUND_MS
# of the fault; a victim must have died by the signal (137) or exit 10.
judge_fault() {
  local s=$1 dir=$2 n=$3 fault=$4 bound=$5
  shift 5
  local victims=" $* " r rc at worst=0 verdict=ok why=""
  for (( r = 0; r < n; r++ )); do
    rc=$(rc_of "$dir" $r)
    if [[ $victims == *" $r "* ]]; then
      case "$rc" in 137|10) continue ;; 124) verdict=hang why="victim rank $r hung"; continue ;; esac
    fi
    case "$rc" in
      10) at=$(failed_at "$dir" $r)
          [ -n "$at" ] || { verdict=other why="rank $r: no failure line"; continue; }
          at=$(( at - fault )); [ $at -lt 0 ] && at=0
          [ $at -gt $worst ] && worst=$at
          [ $at -le "$bound" ] || { [ $verdict = ok ] && verdict=other why="rank $r: error after $at ms (bound $bound)"; }
          if grep -q "internal error" "$dir/rank$r.log"; then
            [ $verdict = ok ] && verdict=other why="rank $r: internal error"
          fi ;;
      13) verdict=wrong why="rank $r: wrong result" ;;
      124|137) [ $verdict = wrong ] || { verdict=hang why="rank $r ended by the harness (exit $rc)"; } ;;
      11) [ $verdict = ok ] && verdict=other why="rank $r: weftCommAbort over its bound" ;;
      *) [ $verdict = ok ] && verdict=other why="rank $r exit ${rc:-none}" ;;
    esac
  done
  [ "$verdict" = ok ] && [ -n "${J_FORCE:-}" ] && verdict=other why=$J_FORCE
  J_FORCE=""
  record "$s" "$verdict" "$worst" "$why"
  [ "$verdict" = ok ] && rm -rf "$dir"
  J_WORST=$worst
}

sizes=(1 1000 65537 262145)
pick_size() { echo "${sizes[$(rand ${#sizes[@]})]}"; }

# One local kill/stop run. $1 scenario, $2 run index, $3 KILL|STOP, then env.
local_fault_run() {
  local s=$1 i=$2 sig=$3
  shift 3
  local dir=$out/$s/run$i n=$nranks port timeout_ms=5000 bound
  port=$(free_port)
  [ "$sig" = STOP ] && timeout_ms=3000
  launch_local "$dir" $n 40 WEFT_COMM_ID=127.0.0.1:$port WEFT_COMM_SECRET=$(secret) WEFT_TIMEOUT_MS=$timeout_ms WEFT_DEBUG=WARN "$@" -- \
    "$(pick_size)" 0 30 10000
  if ! wait_looping "$dir" $n 20000; then
    wait "${L_PIDS[@]}" 2>/dev/null
    record "$s" other 0 "the job did not start ($(grep -h -m1 failed "$dir"/rank*.log | cut -c1-200))"
    return
  fi
  sleep "0.$(printf %03d "$(rand 1000)")"
  local victim pid fault
  victim=$(rand $n)
  pid=$(rank_pid "${L_PIDS[victim]}")
  fault=$(now_ms)
  [ -n "$pid" ] && kill -$sig "$pid"
  if [ "$sig" = STOP ]; then
    # The others must time out on their own; then the straggler is killed.
    local deadline=$(( fault + timeout_ms + 8000 )) r left
    while :; do
      left=0
      for (( r = 0; r < n; r++ )); do
        [ $r = "$victim" ] && continue
        [ -f "$dir/rank$r.status" ] || left=1
      done
      [ $left = 0 ] || [ "$(now_ms)" -gt $deadline ] && break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "${L_PIDS[@]}" 2>/dev/null
  # A straggler's survivors ask every rank where it is before they fail
  # (a diagnosis that waits up to 2 s for answers): their bound is longer.
  bound=$(( timeout_ms + 2000 ))
  [ "$sig" = STOP ] && bound=$(( timeout_ms + 4000 ))
  J_FORCE=""
  if [ "$sig" = STOP ]; then
    # Every survivor's error must name the stopped rank as the one that
    # does not answer.
    local r
    for (( r = 0; r < n; r++ )); do
      [ $r = "$victim" ] && continue
      grep "^rank $r: failed at" "$dir/rank$r.log" 2>/dev/null | grep -q "rank $victim not answering" ||
        J_FORCE="rank $r's error does not name the stopped rank $victim"
    done
  fi
  judge_fault "$s" "$dir" $n "$fault" $bound "$victim"
}

scenario_kill_shm() { local i; for (( i = 1; i <= count; i++ )); do local_fault_run kill-shm $i KILL; done; }
scenario_stop_shm() { local i; for (( i = 1; i <= count; i++ )); do local_fault_run stop-shm $i STOP; done; }
scenario_kill_ibloop() {
  [ -f "$lbv_lib" ] || { R_SKIP[kill-ibloop]="$lbv_lib missing"; return; }
  local i fabric
  for (( i = 1; i <= count; i++ )); do
    fabric=lbv-campaign-$$-$i
    local_fault_run kill-ibloop $i KILL WEFT_IB_VERBS_LIB="$lbv_lib" LOOPBACK_VERBS_FABRIC=$fabric \
      LOOPBACK_VERBS_DEVICES=lbv0:1:IB WEFT_SHM_DISABLE=1 WEFT_NET=IB WEFT_IB_TIMEOUT=14 WEFT_IB_RETRY_CNT=7
    rm -f /dev/shm/$fabric-*
  done
}

source "$here/tools/fault-campaign-net.sh"
source "$here/tools/fault-campaign-ports.sh"

# ------------------------------------------------------------------- main
IFS=, read -ra want <<<"$scenarios"
echo "fault campaign: $count run(s) per scenario, $nranks ranks, logs of failed runs under $out"
for s in "${want[@]}"; do
  row_init "$s"
  start=$(now_ms)
  case "$s" in
    kill-shm) scenario_kill_shm ;;
    kill-net) scenario_kill_net ;;
    kill-ibloop) scenario_kill_ibloop ;;
    stop-shm) scenario_stop_shm ;;
    linkdown) scenario_linkdown ;;
    loss) scenario_loss ;;
    stray) scenario_stray ;;
    hostile) scenario_hostile ;;
    fd-limit) scenario_fd_limit ;;
    shm-limit) scenario_shm_limit ;;
    *) echo "fault-campaign: unknown scenario $s" >&2; exit 2 ;;
  esac
  echo "$s: ${R_RUNS[$s]} runs in $(( ($(now_ms) - start) / 1000 )) s${R_SKIP[$s]:+, SKIPPED: ${R_SKIP[$s]}}"
done

echo
printf '%-12s %6s %10s %6s %7s %6s %14s\n' scenario runs "ok/bound" hangs wrong other "max ms to err"
failed=0
for s in "${want[@]}"; do
  if [ -n "${R_SKIP[$s]}" ]; then printf '%-12s skipped: %s\n' "$s" "${R_SKIP[$s]}"; continue; fi
  printf '%-12s %6d %10d %6d %7d %6d %14d\n' "$s" "${R_RUNS[$s]}" "${R_OK[$s]}" "${R_HANG[$s]}" "${R_WRONG[$s]}" \
    "${R_OTHER[$s]}" "${R_MAX[$s]}"
  [ -n "${R_NOTE[$s]}" ] && echo "    note: ${R_NOTE[$s]}"
  [ $(( R_HANG[$s] + R_WRONG[$s] + R_OTHER[$s] )) -gt 0 ] && failed=1
done
exit $failed
