#!/usr/bin/env bash
# Usage: install_consumer.sh BUILD_DIR CONSUMER_SRC
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/spmd/spmd.hpp"
test -f "$tmp/prefix/lib/cmake/spmd/spmdConfig.cmake"
cmake -S "$src" -B "$tmp/b" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/b" >/dev/null
"$tmp/b/consumer"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
g++ "$src/main.cpp" -o "$tmp/pc_consumer" $(pkg-config --cflags --libs spmd)
"$tmp/pc_consumer"
echo "install_consumer: find_package and pkg-config consumers built and ran"
