# Checks shared by the multihost tests (sourced after netns_hosts.sh).
#
# mh_fail MSG...             record a failure (the test exits 1 at the end)
# mh_check_transports LOGDIR PER
#                            the INIT/NET/BOOTSTRAP lines of every rank log:
#                            same-host connections via SHM, cross-host ones
#                            via NET/Socket on the rank's own veth, addresses
#                            in the rank's own 10.77.0.x, never loopback
# mh_check_perf_ok LOGDIR    every rank exited 0, rank 0 printed "0 OK"
# mh_show_logs LOGDIR        the tail of every rank log (on failure)
# mh_finish                  exit 0, or 1 after listing the failures

MH_FAILURES=()
mh_fail() {
  MH_FAILURES+=("$*")
  echo "FAIL: $*" >&2
}

mh_show_logs() {
  local f
  for f in "$1"/rank*.log; do
    echo "---- $f (last 15 lines that are not INFO)" >&2
    grep -v " weft INFO " "$f" | tail -n 15 >&2
  done
}

mh_finish() {
  if [ ${#MH_FAILURES[@]} -eq 0 ]; then
    echo "PASS"
    exit 0
  fi
  echo "${#MH_FAILURES[@]} failure(s):" >&2
  printf '  %s\n' "${MH_FAILURES[@]}" >&2
  exit 1
}

mh_check_perf_ok() {
  local dir=$1 r
  for r in "${!MH_RC[@]}"; do
    [ "${MH_RC[r]}" = 0 ] || mh_fail "$(basename "$dir"): rank $r (host ${MH_RANK_HOST[r]}) exited ${MH_RC[r]}"
  done
  grep -q "Out of bounds values : 0 OK" "$dir/rank0.log" ||
    mh_fail "$(basename "$dir"): rank 0 did not report 'Out of bounds values : 0 OK'"
}

# Sets MH_SHM_CONNS and MH_NET_CONNS (connection lines seen); failures via mh_fail.
mh_check_transports() {
  local dir=$1 per=$2 r out bad
  MH_SHM_CONNS=0
  MH_NET_CONNS=0
  for r in "${!MH_RANK_HOST[@]}"; do
    local log="$dir/rank$r.log"
    out=$(awk -v me="$r" -v per="$per" -v subnet="$MH_SUBNET" '
      function host(rank) { return int(rank / per) }
      function addr_of(rank) { return subnet "." (host(rank) + 1) ":" }
      / weft INFO conn [0-9]+/ {
        line = $0
        sub(/.* weft INFO conn /, "", line)
        # "<c> : <a> -> <b> via <what>: <why>"
        split(line, f, " ")
        a = f[3]; b = f[5]; via = f[7]; sub(/:$/, "", via)
        if (host(a) == host(b)) {
          if (via !~ /^SHM/) print "BAD same-host conn " a " -> " b " via " via
          else shm++
        } else {
          want = "NET/Socket/mhv" host(me)
          if (via != want) print "BAD cross-host conn " a " -> " b " via " via " (want " want ")"
          else net++
        }
      }
      / NET\/Socket\/[^ ]+: rank [0-9]+ receives from rank [0-9]+ on / {
        split($0, g, " on "); split(g[2], h, " ")
        # A receiving end that reads socket 0 of its own connection to that
        # peer (WEFT_SOCKET_BIDIR) listens nowhere: the sends-to line this
        # rank logged for that peer checks the address of that connection.
        if (g[2] ~ /^socket 0 of its own connection/) next
        if (index(h[1], addr_of(me)) != 1) print "BAD rank " me " receives on " h[1] " (want " addr_of(me) "*)"
      }
      / NET\/Socket\/[^ ]+: rank [0-9]+ sends to rank [0-9]+ at / {
        line = $0; sub(/.* sends to rank /, "", line); split(line, g, " ")
        if (index(g[3], addr_of(g[1])) != 1) print "BAD rank " me " sends to rank " g[1] " at " g[3] " (want " addr_of(g[1]) "*)"
      }
      / bootstrap rank [0-9]+\/[0-9]+: listening on / {
        line = $0; sub(/.* listening on /, "", line); split(line, g, " ")
        if (index(g[1], addr_of(me)) != 1 || g[2] != "(mhv" host(me) "),")
          print "BAD rank " me " bootstrap listens on " g[1] " " g[2]
      }
      /127\.0\.0\.1|NET\/Socket\/lo[:, ]|\(lo\)/ { print "BAD loopback: " $0 }
      END { print "COUNT " shm + 0 " " net + 0 }' "$log")
    bad=$(grep '^BAD' <<<"$out" | head -n 5)
    [ -z "$bad" ] || mh_fail "$(basename "$dir") rank $r: $bad"
    local counts
    counts=($(grep '^COUNT' <<<"$out"))
    MH_SHM_CONNS=$(( MH_SHM_CONNS + ${counts[1]:-0} ))
    MH_NET_CONNS=$(( MH_NET_CONNS + ${counts[2]:-0} ))
  done
}
