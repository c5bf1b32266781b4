#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds and runs a
# consumer project against it with find_package, pkg-config and the static
# library.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig" \
  cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" > /dev/null
cmake --build "$tmp/consumer" -j2 > /dev/null
export LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib/x86_64-linux-gnu"
"$tmp/consumer/with_cmake"
"$tmp/consumer/with_pkgconfig"
"$tmp/consumer/with_static"
echo "install test passed"
