#!/usr/bin/env bash
# torch.distributed with backend "spmd" against "gloo": all_reduce 8 B - 64 MiB and a DDP step
# of a ~25M-parameter MLP, at P = 2 and P = 4, then the call path against a no-op backend
# (overhead.py), each run under spmdrun. Run it on an idle machine.
#   bench/torch/run.sh [BUILD_DIR] [--quick]  full run (--quick: tiny sizes, checks that it works)
#   bench/torch/run.sh - [--quick]            with the spmdrun and spmd_torch that pip installed
#                                             (on PATH), e.g. in a venv of torch 2.x
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
quick=${2:-}
if [[ "${1:-build}" == - ]]; then
  spmdrun=$(command -v spmdrun) || { echo "run.sh: no spmdrun on PATH (pip install ./python first)" >&2; exit 1; }
  export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
else
  build=$(cd "${1:-build}" && pwd)
  spmdrun=$build/bin/spmdrun
  export SPMD_PYTHON=${SPMD_PYTHON:-/usr/bin/python3}
  export PYTHONPATH="$build/python:$here${PYTHONPATH:+:$PYTHONPATH}"
  ls "$build"/python/spmd_torch/_C*.so >/dev/null || { echo "run.sh: build target spmd_torch_python first" >&2; exit 1; }
fi
if [[ "$quick" == "--quick" ]]; then
  allreduce=(-b 8 -e 64K -f 32 --reps 1 --budget 1M)
  ddp=(--width 128 --depth 1 --inputs 64 --steps 2 --reps 1)
  overhead=(-e 64 --iters 50 --reps 1)
  sizes=(2)
else
  allreduce=(-b 8 -e 64M -f 2)
  ddp=()
  overhead=()
  sizes=(2 4)
fi
for p in "${sizes[@]}"; do
  "$spmdrun" --nproc-per-node "$p" "$here/allreduce.py" "${allreduce[@]}"
  "$spmdrun" --nproc-per-node "$p" "$here/ddp_step.py" "${ddp[@]}"
done
"$spmdrun" --nproc-per-node 2 "$here/overhead.py" "${overhead[@]}"
