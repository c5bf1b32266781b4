#!/bin/bash
# DDP step time per comm hook (step_time.py) on 4 ranks: two netns hosts of
# two ranks each joined by a link shaped to RATE (default 1gbit; sockets
# between the hosts, shared memory inside each), then one host of four
# ranks over shared memory. Root only (network namespaces). Prints rank 0's
# table for each set-up.
#   tools/compression-evidence/step_time.sh [RATE]
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-1gbit}
export PYTHONPATH=$PWD/build/bindings/torch${PYTHONPATH:+:$PYTHONPATH}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for setup in "2 2 --rate $rate" "1 4"; do
  set -- $setup
  hosts=$1 per=$2
  shift 2
  echo "== $hosts host(s) x $per ranks ${*:-(shared memory)}"
  rm -f "$work/store"
  bash tests/multihost/netns_hosts.sh run --hosts "$hosts" --ranks-per-host "$per" "$@" --timeout 600 \
    --log-dir "$work/logs" -- "$py" tools/compression-evidence/step_time.py "$work/store" >/dev/null ||
    { tail -n 20 "$work"/logs/rank*.log; exit 1; }
  grep -v '^\[' "$work/logs/rank0.log" | grep -E '^(#|hook|none|bf16|topk|sign)'
done
