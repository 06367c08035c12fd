#!/bin/sh
# Usage: hang.sh SPMDRUN MODULE_DIR   (MODULE_DIR "-": spmd_torch installed in the Python)
# hang.py on 3 ranks under spmdrun --hang-timeout 5: spmdrun must exit 124 with the hang report
# naming rank 1 as the rank that has not entered the second all_reduce, and say how long after
# the stall the report came (bounded loosely: this machine may be loaded). Exit 77 without torch.
spmdrun=$1 module_dir=$2
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
[ "$module_dir" = - ] || export PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}"
out=$(SPMD_PYTHON="$python" timeout 300 "$spmdrun" --nproc-per-node 3 --hang-timeout 5 "$(dirname "$0")/hang.py" 2>&1)
rc=$?
end=$(date +%s.%N)
echo "$out"
[ $rc -eq 124 ] || { echo "hang.sh: spmdrun exited $rc, expected 124 (a hung job stopped by the hang watch)"; exit 1; }
echo "$out" | grep -q "rank 1 has not entered all_reduce" ||
  { echo "hang.sh: the report does not name rank 1 as the one missing from all_reduce"; exit 1; }
echo "$out" | grep -q "second all_reduce finished" && { echo "hang.sh: a rank finished the hung call"; exit 1; }
stall=$(echo "$out" | sed -n 's/.*hang: rank 1 stalls at \([0-9.]*\).*/\1/p' | head -1)
[ -n "$stall" ] || { echo "hang.sh: rank 1 never reached the stall"; exit 1; }
secs=$("$python" -c "print(round($end - $stall, 1))")
echo "hang.sh: the hung torch job was reported and stopped ${secs} s after rank 1 stalled (--hang-timeout 5)"
"$python" -c "import sys; sys.exit(0 if $end - $stall < 60 else 1)" ||
  { echo "hang.sh: took longer than 60 s"; exit 1; }
