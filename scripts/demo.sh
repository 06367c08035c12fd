#!/usr/bin/env bash
# The main job: a small MLP trained data-parallel on 4 processes through the launcher, with a
# checkpoint each epoch (run it again without --fresh to see it resume).
set -euo pipefail
build=${1:-build}
exec "$build/bin/spmdrun" --nproc-per-node 4 "$build/bin/train_mlp" --fresh --checkpoint "$build/demo-mlp.ckpt"
