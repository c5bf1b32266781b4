#!/usr/bin/env bash
# check_nccl_exports.sh LIBRARY NCCL_H
# Checks libnccl.so.2's interface: its SONAME, that it exports exactly the
# functions nccl.h declares (each also as pncclX), and nothing else.
set -euo pipefail
lib=$1 header=$2
fail=0
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != "libnccl.so.2" ]; then echo "FAIL: SONAME is '$soname', want libnccl.so.2"; fail=1; fi

declared=$(grep -o 'WEFT_NCCL_API [a-zA-Z_ *]*\bnccl[A-Za-z]*(' "$header" | grep -o 'nccl[A-Za-z]*($' | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWwiD]$/ {print $3}' | sort -u)

stray=$(echo "$exported" | grep -v -E '^p?nccl[A-Za-z]+$' || true)
if [ -n "$stray" ]; then echo "FAIL: exports non-NCCL symbols:"; echo "$stray" | head -20; fail=1; fi
for f in $declared; do
  for name in "$f" "p$f"; do
    grep -qx "$name" <<< "$exported" || { echo "FAIL: $name is declared in nccl.h but not exported"; fail=1; }
  done
done
for name in $(echo "$exported" | sed 's/^p//' | sort -u); do
  grep -qx "$name" <<< "$declared" || { echo "FAIL: $name is exported but not declared in nccl.h"; fail=1; }
done
n=$(echo "$declared" | wc -w)
[ "$fail" = 0 ] && echo "OK: SONAME $soname, $n functions (+ pnccl twins), nothing else exported"
exit $fail
