#!/usr/bin/env bash
# check_nccl_header_coverage.sh LIBRARY [NVIDIA_NCCL_H]
# Diffs the functions NVIDIA's installed nccl.h declares against what
# libnccl.so.2 exports (each ncclX and its pncclX twin): a program built
# against that header must find every symbol it may call. Fails naming each
# missing one. The header is the argument, else $NCCL_H, else nccl.h under
# $CUDA_HOME, /usr/local/cuda, /usr; with none there, exits 77 (ctest: skipped).
set -euo pipefail
lib=$1
header=${2:-}
if [ -z "$header" ]; then
  for h in "${NCCL_H:-}" "${CUDA_HOME:+$CUDA_HOME/include/nccl.h}" /usr/local/cuda/include/nccl.h /usr/include/nccl.h; do
    if [ -n "$h" ] && [ -f "$h" ]; then header=$h; break; fi
  done
fi
if [ -z "$header" ] || [ ! -f "$header" ]; then
  echo "SKIP: no NVIDIA nccl.h found (give one as the second argument or in NCCL_H; looked under CUDA_HOME, /usr/local/cuda, /usr)"
  exit 77
fi
if grep -q 'WEFT_NCCL_API' "$header"; then
  echo "SKIP: $header is weft's own nccl.h, not NVIDIA's"
  exit 77
fi
version=$(sed -n 's/^#define NCCL_VERSION_CODE[[:space:]]*\([0-9]*\).*/\1/p' "$header" | head -1)

# A declaration: a return type (ncclResult_t, const char*, void), then the
# name and its '(' on the same line; comment lines are skipped.
declared=$(sed -e 's://.*$::' "$header" |
  grep -E '^[[:space:]]*(ncclResult_t|const[[:space:]]+char[[:space:]]*\*|void)[[:space:]]+\*?[[:space:]]*p?nccl[A-Za-z0-9_]*[[:space:]]*\(' |
  grep -oE 'p?nccl[A-Za-z0-9_]*[[:space:]]*\(' | tr -d '( \t' | sed 's/^p//' | sort -u)
n=$(echo "$declared" | wc -w)
if [ "$n" -lt 20 ]; then echo "FAIL: found only $n declarations in $header; the parser no longer fits it"; exit 1; fi

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWwiD]$/ {print $3}' | sort -u)
missing=0
for f in $declared; do
  for name in "$f" "p$f"; do
    if ! grep -qx "$name" <<< "$exported"; then
      echo "FAIL: $name is declared in $header but $lib does not export it"
      missing=$((missing + 1))
    fi
  done
done
if [ "$missing" != 0 ]; then echo "FAIL: $missing symbols missing (NCCL_VERSION_CODE $version)"; exit 1; fi
echo "OK: all $n functions of $header (NCCL_VERSION_CODE $version) and their pnccl twins are exported"
