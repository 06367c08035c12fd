#!/bin/sh
# Usage: selection.sh MODULE_DIR WORLD_SIZE TEST...
# A selection of PyTorch's distributed test suite with BACKEND=spmd, for ctest: every named
# test must pass (a skip fails too). Exit 77 (ctest: skipped) when torch cannot be imported.
module_dir=$1 size=$2
shift 2
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BACKEND=spmd WORLD_SIZE=$size TEMP_DIR=$tmp PYTHONPATH="$module_dir" \
  "$python" "$(dirname "$0")/run_suite.py" --require-pass "$@"
