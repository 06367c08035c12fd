#!/bin/sh
# Runs the PyTorch interop script under spmdrun with Debian's python (which has torch).
# Exit 77 (ctest: skipped) when torch cannot be imported.
spmdrun="$1"
script="$(dirname "$0")/torch_allreduce_under_spmdrun.py"
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
out=$(SPMD_PYTHON="$python" "$spmdrun" --nproc-per-node 4 "$script" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit $rc
[ "$(echo "$out" | grep -c 'all_reduce ok \[6.0, 10.0, 14.0, 18.0\]')" -eq 4 ] || { echo "expected 4 ranks reporting the sum"; exit 1; }
