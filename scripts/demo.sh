#!/usr/bin/env bash
# The main example through the launcher: the best example there is so far.
set -euo pipefail
build=${1:-build}
if [[ -x $build/bin/train_mlp && -x $build/bin/spmdrun ]]; then
  exec "$build/bin/spmdrun" --nproc-per-node 4 "$build/bin/train_mlp"
elif [[ -x $build/bin/hello_ranks && -x $build/bin/spmdrun ]]; then
  exec "$build/bin/spmdrun" --nproc-per-node 4 "$build/bin/hello_ranks"
else
  echo "demo: no example built yet; running the unit tests instead"
  exec ctest --test-dir "$build" --output-on-failure
fi
