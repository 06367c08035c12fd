#!/usr/bin/env bash
# torch.distributed with backend "spmd" against "gloo": all_reduce 8 B - 64 MiB and a DDP step
# of a ~25M-parameter MLP, at P = 2 and P = 4, each run under spmdrun. Run it on an idle machine.
#   bench/torch/run.sh [BUILD_DIR]            full run
#   bench/torch/run.sh [BUILD_DIR] --quick    tiny sizes and model: checks that it works
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
quick=${2:-}
export SPMD_PYTHON=${SPMD_PYTHON:-/usr/bin/python3}
export PYTHONPATH="$build/python:$here${PYTHONPATH:+:$PYTHONPATH}"
ls "$build"/python/spmd_torch/_C*.so >/dev/null || { echo "run.sh: build target spmd_torch_python first" >&2; exit 1; }
if [[ "$quick" == "--quick" ]]; then
  allreduce=(-b 8 -e 64K -f 32 --reps 1 --budget 1M)
  ddp=(--width 128 --depth 1 --inputs 64 --steps 2 --reps 1)
  sizes=(2)
else
  allreduce=(-b 8 -e 64M -f 2)
  ddp=()
  sizes=(2 4)
fi
for p in "${sizes[@]}"; do
  "$build/bin/spmdrun" --nproc-per-node "$p" "$here/allreduce.py" "${allreduce[@]}"
  "$build/bin/spmdrun" --nproc-per-node "$p" "$here/ddp_step.py" "${ddp[@]}"
done
