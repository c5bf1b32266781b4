#!/usr/bin/env bash
# check_nccl_env.sh NCCL_C_CLIENT
# libnccl.so.2 honours the NCCL_* names operators set: NCCL_DEBUG turns its
# log on, each value read under an NCCL name is logged at INFO with that
# name, ~/.nccl.conf (or NCCL_CONF_FILE's file) is read, a WEFT_ name wins over its NCCL twin, and a
# malformed NCCL_ value is the WEFT_ twin's error under the NCCL name; a
# late rank is waited for, a dead one is not, WEFT_TIMEOUT_MS still applies.
set -uo pipefail
client=$1
tmp=$(mktemp -d /tmp/weft-nccl-env-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
# Only what each case sets: nothing from the caller's WEFT_/NCCL_ settings.
for v in $(env | sed -n 's/^\(\(WEFT\|NCCL\)_[A-Z0-9_]*\)=.*/\1/p'); do
  [ "$v" = WEFT_SOCKET_IFNAME ] || unset "$v"
done
export HOME=$tmp
printf 'NCCL_ALGO=ring\nNCCL_NTHREADS=64\n' > "$tmp/.nccl.conf"

expect() {  # expect FILE TEXT
  grep -qF -- "$2" "$1" || { echo "FAIL: '$2' not in $1:"; sed 's/^/  | /' "$1"; fail=1; }
}

# 1. NCCL names in the environment and in ~/.nccl.conf, logged with their source.
log=$tmp/log1
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT NCCL_DEBUG_FILE=$log NCCL_BUFFSIZE=2M NCCL_MIN_NCHANNELS=2 \
  "$client" env > "$tmp/out1" 2>&1 || { echo "FAIL: run 1 exited $?"; cat "$tmp/out1"; fail=1; }
expect "$log" "INFO setting WEFT_DEBUG=INFO (NCCL_DEBUG in the environment)"
expect "$log" "INFO setting WEFT_BUFFSIZE=2M (NCCL_BUFFSIZE in the environment)"
expect "$log" "INFO setting WEFT_MIN_NCHANNELS=2 (NCCL_MIN_NCHANNELS in the environment)"
expect "$log" "INFO setting WEFT_ALGO=ring (NCCL_ALGO in $tmp/.nccl.conf line 1)"
expect "$log" "NCCL_NTHREADS ($tmp/.nccl.conf line 2) has no weft equivalent; ignored"
expect "$log" "2 channel(s)"
expect "$log" "INFO setting WEFT_TIMEOUT_MS=2147483647 (libnccl.so.2's default)"
expect "$log" "timeout 2147483647 ms"

# 1b. NCCL_CONF_FILE takes the place of ~/.nccl.conf, as for NCCL; one that
# cannot be read is warned about.
printf 'NCCL_ALGO=tree\n' > "$tmp/job.conf"
log=$tmp/log1b
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV,INIT NCCL_DEBUG_FILE=$log NCCL_CONF_FILE=$tmp/job.conf \
  "$client" env > "$tmp/out1b" 2>&1 || { echo "FAIL: run 1b exited $?"; cat "$tmp/out1b"; fail=1; }
expect "$log" "INFO setting WEFT_ALGO=tree (NCCL_ALGO in $tmp/job.conf line 1)"
if grep -qF "NCCL_NTHREADS" "$log"; then echo "FAIL: ~/.nccl.conf read although NCCL_CONF_FILE is set"; fail=1; fi
if grep -qF "NCCL_CONF_FILE (environment) has no weft equivalent" "$log"; then echo "FAIL: NCCL_CONF_FILE called unknown"; fail=1; fi
log=$tmp/log1c
NCCL_DEBUG=WARN NCCL_DEBUG_FILE=$log NCCL_CONF_FILE=$tmp/absent.conf \
  "$client" env > "$tmp/out1c" 2>&1 || { echo "FAIL: run 1c exited $?"; cat "$tmp/out1c"; fail=1; }
expect "$log" "$tmp/absent.conf (NCCL_CONF_FILE) cannot be read; ignored"

# 2. The WEFT_ name wins over its NCCL twin; WEFT_DEBUG over NCCL_DEBUG.
log=$tmp/log2
WEFT_DEBUG=INFO NCCL_DEBUG=WARN WEFT_DEBUG_SUBSYS=ENV WEFT_DEBUG_FILE=$log WEFT_BUFFSIZE=1M NCCL_BUFFSIZE=2M \
  "$client" env > "$tmp/out2" 2>&1 || { echo "FAIL: run 2 exited $?"; cat "$tmp/out2"; fail=1; }
expect "$log" "INFO setting WEFT_BUFFSIZE=1M (environment)"
expect "$log" "INFO setting WEFT_DEBUG=INFO (environment)"

# 3. Malformed values: the WEFT_ twin's error, naming the NCCL variable.
for pair in BUFFSIZE=big MAX_NCHANNELS=lots; do
  name=${pair%%=*} value=${pair#*=}
  env "WEFT_$name=$value" "$client" env > "$tmp/weft.out" 2>&1
  rcw=$?
  env "NCCL_$name=$value" "$client" env > "$tmp/nccl.out" 2>&1
  rcn=$?
  [ "$rcw" = 2 ] && [ "$rcn" = 2 ] || { echo "FAIL: $pair: exit $rcw (WEFT_) and $rcn (NCCL_), want 2 and 2"; fail=1; }
  # "init: <ncclGetErrorString>: <ncclGetLastError>"; the string names NCCL_DEBUG
  expect "$tmp/weft.out" "init: invalid argument (run with NCCL_DEBUG=WARN for details)"
  expect "$tmp/nccl.out" "init: invalid argument (run with NCCL_DEBUG=WARN for details)"
  expect "$tmp/weft.out" ": WEFT_$name=$value is not an integer"
  expect "$tmp/nccl.out" ": NCCL_$name=$value is not an integer (read for WEFT_$name)"
done

# 4. Timeouts: a live but late rank is waited for (NCCL waits until the
# framework aborts); WEFT_TIMEOUT_MS, when set, still bounds the wait; a
# dead peer fails the survivor at once. Rank 0 prints "rank 0: <result>
# after <s> s".
rank0() {  # rank0 FILE: rank 0's result and seconds
  sed -n 's/^rank 0: \(.*\) after \([0-9.]*\) s$/\1|\2/p' "$1"
}
judge() {  # judge CASE FILE WANT_SUCCESS(yes|no) MAX_SECONDS
  local line result secs
  line=$(rank0 "$2"); result=${line%|*}; secs=${line#*|}
  if [ -z "$line" ]; then echo "FAIL: $1: no result from rank 0:"; sed 's/^/  | /' "$2"; fail=1; return; fi
  if { [ "$3" = yes ] && [ "$result" != success ]; } || { [ "$3" = no ] && [ "$result" = success ]; }; then
    echo "FAIL: $1: rank 0 got '$result'"; fail=1
  fi
  awk -v s="$secs" -v m="$4" 'BEGIN { exit !(s <= m) }' || { echo "FAIL: $1: took $secs s, more than $4"; fail=1; }
  echo "$1: rank 0 got '$result' after $secs s"
}
timeout 60 "$client" late > "$tmp/late" 2>&1
judge "late rank, default timeout" "$tmp/late" yes 10
WEFT_TIMEOUT_MS=1000 timeout 60 "$client" late > "$tmp/late1s" 2>&1
judge "late rank, WEFT_TIMEOUT_MS=1000" "$tmp/late1s" no 2.4
timeout 60 "$client" dead > "$tmp/dead" 2>&1
judge "dead peer, default timeout" "$tmp/dead" no 5

[ "$fail" = 0 ] && echo "OK: NCCL names read, logged with their source, below WEFT names; malformed values rejected; NCCL's timeouts"
exit $fail
