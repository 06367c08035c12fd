#!/usr/bin/env bash
# ctest gpu_bundle_fake: the GPU bundle end to end without a GPU. Makes a bundle whose CUDA
# module is the fake (scripts/gpu-bundle.sh --fake), runs tests/gpu/run.sh on it (every check
# but those that need a real GPU or two must pass), then checks that a bundle without the fake
# on a machine without a GPU is skipped cleanly.
#   tests/gpu/bundle_fake_test.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bash "$src/scripts/gpu-bundle.sh" --fake "$build" "$out/bundle"
echo "bundle: $(du -sh "$out/bundle" | cut -f1)"
set +e
bash "$src/tests/gpu/run.sh" "$out/bundle" | tee "$out/run.txt"
rc=${PIPESTATUS[0]}
set -e
[[ $rc == 0 ]] || { echo "bundle_fake_test: run.sh failed (exit $rc)"; exit 1; }
for check in libraries dtypes_with_sentinels out_of_place_forms after_default_stream_work device_dispatch \
             conformance_one_rank wait_and_synchronize ddp_step allreduce_64mib shared_gpu_refused; do
  grep -q "^PASS $check " "$out/run.txt" || { echo "bundle_fake_test: $check did not pass"; exit 1; }
done
grep -q '^SKIP torch_nccl_64mib' "$out/run.txt"
grep -q '^SKIP suite_all_gpus' "$out/run.txt"
# The same bundle, not marked fake, on this machine without a GPU: skipped, exit 0.
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  rm "$out/bundle/FAKE"
  bash "$src/tests/gpu/run.sh" "$out/bundle" | tee "$out/skip.txt"
  grep -q '^run.sh: skipped: no NVIDIA GPU here' "$out/skip.txt"
fi
echo "bundle_fake_test: passed"
