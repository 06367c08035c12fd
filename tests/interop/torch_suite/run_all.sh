#!/usr/bin/env bash
# The whole of PyTorch's distributed test suite with backend "gloo" and backend "spmd", at
# WORLD_SIZE 2 and 3, then the comparison table (compare.py) that docs/torch.md shows.
# Takes hours on a small machine (every test spawns its processes).
#   tests/interop/torch_suite/run_all.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, build/torch_suite)
# Environment: SIZES="2 3", BACKENDS="gloo spmd" select configurations; PYTHON (/usr/bin/python3).
# The spmd_torch module is copied to OUT_DIR/module first, so rebuilding meanwhile is safe.
# Then the tests gloo passes and the suite gates to gloo by name run once more on spmd with
# run_suite.py --impersonate-gloo (spmd-as-gloo-W.jsonl).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-$build/torch_suite}
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$out/module"
cp -r "$build"/python/spmd_torch "$out/module/" || { echo "run_all.sh: build target spmd_torch_python first" >&2; exit 1; }
for size in ${SIZES:-2 3}; do
  for backend in ${BACKENDS:-gloo spmd}; do
    name="$backend-$size"
    echo "== $name: $(date +%T)"
    rm -f "$out/$name.jsonl"
    tmp=$(mktemp -d)
    # The suite's exit status is non-zero when a test fails; the table reports it.
    BACKEND=$backend WORLD_SIZE=$size TEMP_DIR=$tmp PYTHONPATH="$out/module" \
      "$python" "$here/run_suite.py" --results "$out/$name.jsonl" >"$out/$name.log" 2>&1 || true
    rm -rf "$tmp"
  done
done
for size in ${SIZES:-2 3}; do
  gated=$("$python" "$here/compare.py" --gated "$out" "$size")
  [ -n "$gated" ] || continue
  echo "== spmd-as-gloo-$size: $(date +%T)"
  rm -f "$out/spmd-as-gloo-$size.jsonl"
  tmp=$(mktemp -d)
  # shellcheck disable=SC2086  # one test name per word
  BACKEND=spmd WORLD_SIZE=$size TEMP_DIR=$tmp PYTHONPATH="$out/module" \
    "$python" "$here/run_suite.py" --impersonate-gloo --results "$out/spmd-as-gloo-$size.jsonl" $gated \
    >"$out/spmd-as-gloo-$size.log" 2>&1 || true
  rm -rf "$tmp"
done
"$python" "$here/compare.py" "$out" | tee "$out/table.md"
