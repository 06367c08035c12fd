#!/bin/sh
# Usage: run.sh SPMDRUN MODULE_DIR NPROC EXPECT SCRIPT [ARGS...]
# Runs a Python script under spmdrun with Debian's python (SPMD_PYTHON overrides) and the
# built spmd_torch module on PYTHONPATH. Passes when spmdrun exits 0 and the grep -E pattern
# EXPECT appears on NPROC lines (once per rank). Exit 77 (ctest: skipped) without torch.
spmdrun=$1 module_dir=$2 nproc=$3 expect=$4
shift 4
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
out=$(SPMD_PYTHON="$python" PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}" "$spmdrun" --nproc-per-node "$nproc" "$@" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit $rc
n=$(echo "$out" | grep -cE "$expect")
[ "$n" -eq "$nproc" ] || { echo "expected $nproc lines matching '$expect', got $n"; exit 1; }
