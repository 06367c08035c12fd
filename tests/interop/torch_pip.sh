#!/bin/sh
# Usage: torch_pip.sh BUILD_DIR
# pip install ./python into a fresh venv (--system-site-packages: Debian's torch) made from
# Debian's python3, as a user would, then tests/torch2/pip_check.sh: spmdrun from the venv's
# bin/ trains with backend "spmd" from another folder, with no PYTHONPATH or SPMD_PYTHON.
# SPMD_PIP_BUILD_DIR=BUILD_DIR: pip's CMake build reuses this build (its targets are up to
# date), so the test checks the packaging, not a second compile; tests/torch2 builds through
# pip from scratch in the Debian 13 root. Exit 77 without torch or python3-venv.
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
python=/usr/bin/python3
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 ||
  { cat "$tmp/venv.log"; echo "python3 -m venv failed (Debian: python3-venv): skipped"; exit 77; }
SPMD_PIP_BUILD_DIR=$build "$tmp/venv/bin/python3" -m pip install --no-build-isolation --no-index --quiet \
  --disable-pip-version-check "$src/python" || { echo "torch_pip.sh: pip install ./python failed"; exit 1; }
mkdir "$tmp/work"
cd "$tmp/work" && PATH="$tmp/venv/bin:$PATH" sh "$src/tests/torch2/pip_check.sh" "$tmp/venv/bin/spmdrun"
