#!/usr/bin/env bash
# Usage: install_consumer.sh BUILD_DIR CONSUMER_SRC
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/spmd/spmd.hpp"
test -f "$tmp/prefix/lib/cmake/spmd/spmdConfig.cmake"
# spmdrun with its man page and bash completion (made from its --help at build time).
test -x "$tmp/prefix/bin/spmdrun"
test -f "$tmp/prefix/share/man/man1/spmdrun.1"
test -f "$tmp/prefix/share/bash-completion/completions/spmdrun"
# With the LibTorch adapter installed, find_package(spmd COMPONENTS torch) must give spmd::spmd_torch.
torch=OFF
[ -f "$tmp/prefix/lib/cmake/spmd/spmdTorchTargets.cmake" ] && torch=ON
cmake -S "$src" -B "$tmp/b" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" -DSPMD_CONSUMER_TORCH=$torch >/dev/null
cmake --build "$tmp/b" >/dev/null
"$tmp/b/consumer"
[ $torch = OFF ] || "$tmp/b/consumer_torch"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
g++ "$src/main.cpp" -o "$tmp/pc_consumer" $(pkg-config --cflags --libs spmd)
"$tmp/pc_consumer"
# The Python module lands in the prefix's site-packages and registers the backend from there.
package=$(find "$tmp/prefix" -path '*/spmd_torch/__init__.py' | head -1)
if [ -d "$build/python/spmd_torch" ] && [ -z "$package" ]; then echo "install_consumer: spmd_torch was built but not installed"; exit 1; fi
if [ -n "$package" ]; then
  PYTHONPATH=$(dirname "$(dirname "$package")") /usr/bin/python3 -c \
    "import spmd_torch, torch.distributed as d; assert d.Backend('spmd') == 'spmd'; print('spmd_torch', spmd_torch.__version__, 'imports from', spmd_torch.__file__)"
fi
echo "install_consumer: find_package (LibTorch adapter: $torch) and pkg-config consumers built and ran"
