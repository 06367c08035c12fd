#!/usr/bin/env bash
# Makes a self-contained folder for checking spmd on a GPU machine that has only a driver, the
# CUDA runtime and NCCL (a CUDA install, or PyTorch's nvidia-* wheels): no compiler, CMake or
# GoogleTest is needed there. tests/gpu/run.sh BUNDLE runs its checks.
#   scripts/gpu-bundle.sh [--fake] [BUILD_DIR] [OUT_DIR]    (defaults: build, BUILD_DIR/gpu-bundle)
#   --fake   the fake CUDA/NCCL module in libspmd_cuda.so's place: the same checks run here,
#            without a GPU (what ctest's gpu_bundle_fake does)
# Layout: bin/ (spmdrun and the GPU test programs, spmd linked in, stripped), lib/libspmd_cuda.so
# (found by the programs as ../lib; its CUDA and NCCL libraries are found by run.sh),
# torch_nccl_allreduce.py, MANIFEST (what it holds, from which commit, which module).
set -euo pipefail
fake=0
if [[ "${1:-}" == --fake ]]; then fake=1; shift; fi
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-$build/gpu-bundle}
[[ -f "$build/CMakeCache.txt" ]] || { echo "gpu-bundle.sh: $build is not a configured build folder (cmake -S . -B build first)" >&2; exit 2; }

targets=(spmdrun gpu_suite_test)
if [[ $fake == 1 ]]; then
  targets+=(spmd_cuda_fake)
elif cmake --build "$build" --target help 2>/dev/null | grep -q 'spmd_cuda:'; then
  targets+=(spmd_cuda gpu_fault_test gpu_fault_worker)
else
  echo "gpu-bundle.sh: this build has no CUDA module (spmd builds libspmd_cuda.so where CMake finds the CUDA toolkit" \
       "and NCCL: cmake -DSPMD_WITH_NCCL=ON shows why not); use --fake for a bundle that runs without a GPU" >&2
  exit 2
fi
cmake --build "$build" --target "${targets[@]}" >/dev/null

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
# spmdrun is in the build's bin/, the test programs in its tests/bin/; the bundle has one bin/.
for p in bin/spmdrun tests/bin/gpu_suite_test tests/bin/gpu_fault_test tests/bin/gpu_fault_worker; do
  t=${p##*/}
  [[ -x "$build/$p" && ( $fake == 0 || $t == spmdrun || $t == gpu_suite_test ) ]] || continue
  cp "$build/$p" "$out/bin/$t"
  strip --strip-unneeded "$out/bin/$t"
done
if [[ $fake == 1 ]]; then
  cp "$build/lib/libspmd_cuda_fake.so" "$out/lib/libspmd_cuda.so"
  echo "fake: SPMD_FAKE_GPUS devices (default 1), no CUDA library" >"$out/FAKE"
else
  cp "$build/lib/libspmd_cuda.so" "$out/lib/libspmd_cuda.so"
fi
strip --strip-unneeded "$out/lib/libspmd_cuda.so"
cp "$src/tests/gpu/torch_nccl_allreduce.py" "$out/"
{
  echo "spmd GPU bundle, made $(date -u +%FT%TZ) from commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "module: $([[ $fake == 1 ]] && echo 'fake CUDA/NCCL (tests/gpu/fake_module.cpp)' || echo 'libspmd_cuda.so over the CUDA runtime and NCCL')"
  (cd "$out" && find . -type f ! -name MANIFEST | sort | while read -r f; do echo "$(du -k "$f" | cut -f1) KiB  $f"; done)
} >"$out/MANIFEST"
echo "gpu-bundle.sh: $out ($(du -sh "$out" | cut -f1)); run it with tests/gpu/run.sh $out"
