#!/bin/sh
# Usage: parity.sh SPMDRUN MODULE_DIR NPROC [SPMD_BACKEND]
# parity.py with backend "gloo", then with SPMD_BACKEND ("spmd", or torch 2.x's "cpu:spmd,...")
# on NPROC ranks under spmdrun; parity_compare.py checks both ended with the same results.
# MODULE_DIR "-" means spmd_torch is installed in the Python (pip). Exit 77 without torch.
spmdrun=$1 module_dir=$2 nproc=$3 backend=${4:-spmd}
here=$(dirname "$0")
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
[ "$module_dir" = - ] || export PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for b in gloo "$backend"; do
  tag=$(echo "$b" | tr ':,' '__')
  SPMD_PYTHON="$python" "$spmdrun" --nproc-per-node "$nproc" "$here/parity.py" --backend "$b" --out "$tmp/$tag" ||
    { echo "parity.sh: the run with backend $b failed"; exit 1; }
done
"$python" "$here/parity_compare.py" "$tmp/gloo" "$tmp/$(echo "$backend" | tr ':,' '__')" "$nproc"
