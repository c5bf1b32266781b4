#!/usr/bin/env bash
# Runs every test of torch's distributed_test.py on gloo and on weft (2 ranks
# by default) and compares the outcomes: every test that passes on gloo must
# pass on weft. Not run in CI (2 to 5 minutes per backend on 2 busy cores);
# ctest's Clients.Torch.TorchSuite runs a short subset.
#
# Usage: tests/clients/torch/run_full_suite.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  weft's build directory (default: build)
#   OUT_DIR    where gloo.jsonl, weft.jsonl, summary.txt and outcomes.txt (one
#              line per test: both outcomes) go (default: BUILD_DIR/torch-suite)
# BACKENDS="gloo weft" and WORLD_SIZE=2 may be overridden in the environment.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-$build/torch-suite}
mkdir -p "$out"
export WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo}
export PYTHONPATH=$build/bindings/torch${PYTHONPATH:+:$PYTHONPATH}
export PYTHONWARNINGS=ignore OMP_NUM_THREADS=1 WORLD_SIZE=${WORLD_SIZE:-2}
for backend in ${BACKENDS:-gloo weft}; do
  rm -f "$out/$backend.jsonl"
  echo "== $backend: log in $out/$backend.log"
  BACKEND=$backend /usr/bin/python3 "$here/torch_suite.py" --all --results "$out/$backend.jsonl" \
    >"$out/$backend.log" 2>&1 || true
done
/usr/bin/python3 "$here/compare_suite.py" --table "$out/outcomes.txt" "$out/gloo.jsonl" "$out/weft.jsonl" |
  tee "$out/summary.txt"
