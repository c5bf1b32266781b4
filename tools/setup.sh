#!/usr/bin/env bash
# Installs what weft needs on Debian 12 (run as root). Safe to re-run: only
# missing packages are installed.
set -euo pipefail
pkgs=(cmake g++ make pkg-config libhwloc-dev hwloc nlohmann-json3-dev libgtest-dev libgmock-dev
      libibverbs-dev rdma-core libopenmpi-dev openmpi-bin libgloo-dev iperf3 python3 iproute2
      # stacks of a test process that outlived its deadline (tests/process)
      elfutils
      # pgrep: tools/fault-campaign.sh finds the rank processes it kills (ctest label faults)
      procps
      # the size limits of tools/check-code-shape.sh (ctest label lint)
      universal-ctags
      # the PyTorch backend (bindings/torch): Debian's torch 1.13, CPU only
      python3-torch libtorch-dev pybind11-dev
      # weft-doctor --history's trend plot (tools/weft-doctor/weft-doctor-plot)
      python3-matplotlib)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
