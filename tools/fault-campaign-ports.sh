# Scenarios of tools/fault-campaign.sh at weft's listening ports (sourced by
# it): stray (no secret) and hostile (with the secret), plus the limit sweeps
# fd-limit and shm-limit.
#
# A stray/hostile run: process ranks on this host over the socket transport
# (shared memory off, so that every pair has socket data listeners), the last
# rank started 1.5 s late so that init lasts long enough to be attacked.
# tests/faults/fault_peer.cc attacks the bootstrap root as soon as it listens,
# every rank listener as soon as its log names it, every socket data listener
# likewise (during init), and again every listener once the job loops (during
# collectives). The job loops until the attacks are over (CAMPAIGN_STOP_FILE)
# and must end with every result right
# and every attacking connection closed by weft within 8 s.

P_ATTACKS=()   # fault_peer summary lines of the current run

# attack ADDR PURPOSE MODE... : runs the attack set in the background.
attack() {
  local addr=$1 purpose=$2 kind=$3 log=$4 n=$nranks
  if [ "$kind" = stray ]; then
    "$peer_bin" "$addr" "$purpose" stall 8 "$n" 11000 >>"$log" 2>&1 &
    P_APIDS+=($!)
    (
      for m in garbage truncated wrongsecret; do "$peer_bin" "$addr" "$purpose" $m 8 "$n"; done
      "$peer_bin" "$addr" "$purpose" replay 4 "$n"
      "$peer_bin" "$addr" "$purpose" flood "${P_FLOOD:-200}" "$n"
    ) >>"$log" 2>&1 &
    P_APIDS+=($!)
  else
    "$peer_bin" "$addr" "$purpose" hostile 1 "$n" >>"$log" 2>&1 &
    P_APIDS+=($!)
  fi
}

# The listeners a run's logs name so far: "purpose addr" lines.
listeners() {
  local dir=$1
  sed -n 's/.*bootstrap root listening on \([0-9.:]*\).*/root \1/p' "$dir"/rank*.log 2>/dev/null
  sed -n 's/.*bootstrap rank [0-9]*\/[0-9]*: listening on \([0-9.:]*\).*/peer \1/p' "$dir"/rank*.log 2>/dev/null
  sed -n 's/.*receives from rank [0-9]* on \([0-9.:]*\).*/data \1/p' "$dir"/rank*.log 2>/dev/null
}

ports_run() {
  local s=$1 i=$2 kind=$3
  local dir=$out/$s/run$i port log r
  port=$(free_port)
  log=$dir/attacks.log
  mkdir -p "$dir"
  : >"$log"
  export WEFT_COMM_ID=127.0.0.1:$port WEFT_COMM_SECRET
  WEFT_COMM_SECRET=$(secret)
  P_APIDS=()
  rm -f "$dir/stop"
  L_DELAY_LAST=1.5 launch_local "$dir" $nranks 90 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET \
    WEFT_SHM_DISABLE=1 WEFT_NET=Socket WEFT_TIMEOUT_MS=20000 CAMPAIGN_STOP_FILE="$dir/stop" -- 16411 1000000 80 10000
  # During init: each listener once, as soon as a log names it.
  declare -A seen=()
  local line deadline=$(( $(now_ms) + 15000 )) looping=0
  while [ "$(now_ms)" -lt $deadline ]; do
    while read -r line; do
      [ -n "$line" ] && [ -z "${seen[$line]:-}" ] || continue
      seen[$line]=1
      P_FLOOD=200; [ "${line%% *}" = root ] && P_FLOOD=5000
      attack "${line#* }" "${line%% *}" "$kind" "$log"
    done < <(listeners "$dir")
    [ "$(cat "$dir"/rank*.log 2>/dev/null | grep -c ': looping$')" -ge $nranks ] && { looping=1; break; }
    ls "$dir"/rank*.status >/dev/null 2>&1 && break
    sleep 0.02
  done
  # During collectives: every listener again (the root and data listeners
  # have closed by now; their refused connects are counted apart); 5000
  # connections in a row at rank 1's listener.
  if [ $looping = 1 ]; then
    for line in "${!seen[@]}"; do
      P_FLOOD=200; [ "$line" = "$(listeners "$dir" | grep -m1 '^peer')" ] && P_FLOOD=5000
      attack "${line#* }" "${line%% *}" "$kind" "$log"
    done
  fi
  # The job runs until every attack is over, then stops after one round.
  wait "${P_APIDS[@]}" 2>/dev/null
  touch "$dir/stop"
  wait "${L_PIDS[@]}" 2>/dev/null
  unset WEFT_COMM_ID WEFT_COMM_SECRET
  local bad="" why=""
  for (( r = 0; r < nranks; r++ )); do
    case "$(rc_of "$dir" $r)" in
      0) ;;
      13) bad=wrong why="rank $r: wrong result" ;;
      124|137) [ "$bad" = wrong ] || { bad=hang why="rank $r ended by the harness"; } ;;
      *) [ -n "$bad" ] || { bad=other why="rank $r exit $(rc_of "$dir" $r): $(grep -h -m1 'failed at' "$dir/rank$r.log" | cut -c1-200)"; } ;;
    esac
  done
  grep -q "left open, " "$log" || { [ -n "$bad" ] || { bad=other why="no attack ran"; }; }
  if grep "left open" "$log" | grep -vq " 0 left open"; then
    [ -n "$bad" ] || { bad=other why="a connection was left open: $(grep "left open" "$log" | grep -v ' 0 left open' | head -1)"; }
  fi
  if grep -q "usage\|could not record\|Segmentation\|terminate called" "$log"; then
    [ -n "$bad" ] || { bad=other why="attacker trouble: $(grep -m1 'usage\|could not record\|Segmentation\|terminate' "$log")"; }
  fi
  # Tally the attacks: attempts, refused, port closed, slowest refusal.
  P_SUM=$(awk '/left open/ { a += $5; r += $7; c += $9; o += $14; if ($19 > m) m = $19 }
                END { printf "%d %d %d %d %d", a, r, c, o, m }' "$log")
  local rejected
  rejected=$(cat "$dir"/rank*.log | grep -c "rejected connection\|rejected a hello\|failed its integrity\|-byte frame")
  read -r a rf cf lo mx <<<"$P_SUM"
  P_TOT_A=$(( P_TOT_A + a )) P_TOT_R=$(( P_TOT_R + rf )) P_TOT_C=$(( P_TOT_C + cf )) P_TOT_O=$(( P_TOT_O + lo ))
  P_TOT_W=$(( P_TOT_W + rejected ))
  [ "$mx" -gt "$P_TOT_M" ] && P_TOT_M=$mx
  record "$s" "${bad:-ok}" "$mx" "$why"
  [ -z "$bad" ] && rm -rf "$dir"
}

ports_scenario() {
  local s=$1 kind=$2 i
  P_TOT_A=0 P_TOT_R=0 P_TOT_C=0 P_TOT_O=0 P_TOT_M=0 P_TOT_W=0
  for (( i = 1; i <= ports_count; i++ )); do ports_run "$s" $i "$kind"; done
  R_NOTE[$s]="$P_TOT_A attacking connections: $P_TOT_R refused by weft, $P_TOT_C found the port closed, $P_TOT_O left open; $P_TOT_W rejections logged by the ranks (WARN); max ms = slowest refusal"
}
scenario_stray() { ports_scenario stray stray; }
scenario_hostile() { ports_scenario hostile hostile; }

# limit_run SCENARIO I WHAT_RE [K=V ...]: 4 ranks, 20 verified AllReduces,
# under the limit the caller set (L_ULIMIT / L_WRAP). Every rank must end on
# its own (no hang, no crash, no wrong result): all succeed, or some fail and
# at least one failure line matches WHAT_RE (the limit named).
limit_run() {
  local s=$1 i=$2 what=$3
  shift 3
  local dir=$out/$s/run$i port r rc start took bad="" why="" failed=0 n=4
  port=$(free_port)
  start=$(now_ms)
  launch_local "$dir" $n 40 WEFT_COMM_ID=127.0.0.1:$port WEFT_COMM_SECRET="$(secret)" WEFT_TIMEOUT_MS=5000 \
    WEFT_DEBUG=WARN "$@" -- 65537 20 30 10000
  wait "${L_PIDS[@]}" 2>/dev/null
  took=$(( $(now_ms) - start ))
  for (( r = 0; r < n; r++ )); do
    rc=$(rc_of "$dir" $r)
    case "$rc" in
      0) ;;
      2|10) failed=1 ;;
      13) bad=wrong why="rank $r: wrong result" ;;
      124|137) [ "$bad" = wrong ] || { bad=hang why="rank $r ended by the harness"; } ;;
      *) [ -n "$bad" ] || { bad=other why="rank $r exit ${rc:-none} (crash?)"; } ;;
    esac
  done
  if [ -z "$bad" ] && [ $failed = 1 ] && ! grep -h "failed at" "$dir"/rank*.log | grep -qE "$what"; then
    bad=other why="no error names the limit: $(grep -h -m1 'failed at' "$dir"/rank*.log | cut -c1-240)"
  fi
  LIMIT_FAILED=$failed
  record "$s" "${bad:-ok}" "$took" "$why"
  [ -z "$bad" ] && [ "${KEEP_ONE:-}" != "$i" ] && rm -rf "$dir"
  return 0
}

scenario_fd_limit() {
  local limits=(8 10 12 13 14 16 20 24 64) i l t hit=0
  for (( i = 1; i <= count; i++ )); do
    l=${limits[$(( i % ${#limits[@]} ))]}
    t=shm; [ $(( (i / ${#limits[@]}) % 2 )) = 1 ] && t=socket
    if [ $t = shm ]; then L_ULIMIT=$l limit_run fd-limit $i "ulimit -n|descriptors"
    else L_ULIMIT=$l limit_run fd-limit $i "ulimit -n|descriptors" WEFT_SHM_DISABLE=1 WEFT_NET=Socket; fi
    hit=$(( hit + LIMIT_FAILED ))
  done
  R_NOTE[fd-limit]="ulimit -n of ${limits[*]}, shm and socket transports in turn; $hit runs hit the limit and named it; max ms = slowest run"
}

scenario_shm_limit() {
  local sizes=(16k 64k 256k 1m 4m 16m 64m) i sz holder hit=0
  for (( i = 1; i <= count; i++ )); do
    sz=${sizes[$(( i % ${#sizes[@]} ))]}
    unshare -m --propagation private sleep 600 &
    holder=$!
    sleep 0.1
    if ! nsenter -t $holder -m mount -t tmpfs -o size=$sz tmpfs /dev/shm 2>/dev/null; then
      kill $holder; wait $holder 2>/dev/null
      R_SKIP[shm-limit]="cannot mount a small tmpfs on /dev/shm in a private mount namespace (needs root and unshare)"
      return
    fi
    L_WRAP="nsenter -t $holder -m --" limit_run shm-limit $i "/dev/shm"
    hit=$(( hit + LIMIT_FAILED ))
    kill $holder; wait $holder 2>/dev/null
  done
  R_NOTE[shm-limit]="/dev/shm of ${sizes[*]} (tmpfs in a private mount namespace); $hit runs hit the limit and named it; max ms = slowest run"
}
