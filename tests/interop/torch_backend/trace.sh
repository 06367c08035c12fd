#!/bin/sh
# Usage: trace.sh SPMDRUN MODULE_DIR   (MODULE_DIR "-": spmd_torch installed in the Python)
# spmdrun --trace over a torch job with backend "spmd" and a subgroup: the merged trace must be
# valid JSON with the world's 3 all_reduces on each of the 2 ranks. Exit 77 without torch.
spmdrun=$1 module_dir=$2
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
[ "$module_dir" = - ] || export PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SPMD_PYTHON="$python" "$spmdrun" --nproc-per-node 2 --trace "$tmp/job.json" "$(dirname "$0")/trace.py" ||
  { echo "trace.sh: spmdrun failed"; exit 1; }
"$python" - "$tmp/job.json" <<'PY'
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
calls = collections.Counter((e["name"], e["pid"]) for e in events if e.get("ph") == "X")
print("trace.sh: calls per (name, rank):", dict(calls))
sys.exit(0 if calls == {("all_reduce", 0): 3, ("all_reduce", 1): 3} else 1)
PY
