#!/bin/bash
# Two namespace hosts x two ranks: all_reduce, reduce_scatter, all_gather and
# broadcast perf binaries with checking must pass (0 wrong), same-host peers
# must talk over SHM and cross-host peers over NET/Socket on their veth (the
# logs say so, and the switch ports carried the bytes).
#
#   collectives_2x2.sh <directory of the perf binaries>
#
# Each host also has a "management" interface listed before its veth
# (mgmt0, 10.77.<100+i>.1/24, that no other host can reach). all_reduce_perf
# runs with WEFT_SOCKET_IFNAME=mhv<host>; the others without it, so weft's
# default choice must find the network of WEFT_COMM_ID's address by itself
# (before it did, every rank advertised its mgmt0 address and init hung
# until WEFT_TIMEOUT_MS). Exit 77 (skip) without root or network namespaces.
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns_hosts.sh"
source "$here/checks.sh"
bindir=${1:?usage: collectives_2x2.sh <directory of the perf binaries>}

mh_check || exit $?
unset ${!WEFT_@}
logroot=$(mktemp -d /tmp/weft-multihost-2x2.XXXXXX)
mh_setup 2 --decoy || { mh_log "set-up failed"; exit 1; }
trap 'mh_teardown; rm -rf "$logroot"' EXIT

per=2
for coll in all_reduce reduce_scatter all_gather broadcast; do
  bin="$bindir/${coll}_perf"
  [ -x "$bin" ] || { mh_fail "$bin not built"; continue; }
  ifenv=()
  [ "$coll" != all_reduce ] && ifenv=(WEFT_SOCKET_IFNAME=)   # empty = unset: weft's default choice
  dir="$logroot/$coll"
  before=$(( $(mh_port_bytes 0) + $(mh_port_bytes 1) ))
  start=$(mh_now_ms)
  mh_launch $per 40 "$dir" WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=INIT,NET,BOOTSTRAP WEFT_TIMEOUT_MS=20000 "${ifenv[@]}" \
    -- "$bin" -b 8 -e 4M -f 8 -n 3 -w 1 -c 1 -T 30
  mh_wait
  took=$(( $(mh_now_ms) - start ))
  crossed=$(( $(mh_port_bytes 0) + $(mh_port_bytes 1) - before ))
  nfail=${#MH_FAILURES[@]}
  mh_check_perf_ok "$dir"
  mh_check_transports "$dir" $per
  shm=$MH_SHM_CONNS net=$MH_NET_CONNS
  [ "${shm:-0}" -gt 0 ] || mh_fail "$coll: no same-host connection via SHM in the logs"
  [ "${net:-0}" -gt 0 ] || mh_fail "$coll: no cross-host connection via NET/Socket in the logs"
  [ "$crossed" -gt $(( 1 << 20 )) ] || mh_fail "$coll: only $crossed bytes crossed the switch"
  echo "$coll: ${took} ms, ranks exit ${MH_RC[*]}, conn lines: $shm via SHM, $net via NET/Socket/mhv*; $crossed bytes through the switch"
  [ ${#MH_FAILURES[@]} -gt "$nfail" ] && mh_show_logs "$dir"
done
mh_finish
