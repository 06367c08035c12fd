#!/bin/sh
# Inside a Debian root (scripts/debian13-root.sh --run): makes the venv VENV (with the system's
# site packages: Debian's torch) unless it exists, and installs spmd's python/ into it with pip,
# as a user would: python3 -m pip install --no-build-isolation ./python. The CMake build folder
# is kept (SPMD_PIP_BUILD_DIR), so a second run rebuilds only what changed.
# Usage: pip_install.sh VENV BUILD_DIR
set -eu
venv=$1 build=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$venv/bin/python3" ] || python3 -m venv --system-site-packages "$venv"
SPMD_PIP_BUILD_DIR=$build "$venv/bin/python3" -m pip install --no-build-isolation --no-index --quiet \
  --disable-pip-version-check "$src/python"
echo "pip_install: spmd-torch installed into $venv ($("$venv/bin/python3" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null))"
