#!/usr/bin/env bash
# Runs the GPU suite on a machine with NVIDIA GPUs: one rank per GPU under spmdrun (NCCL
# conformance against the host reference, DDP on CUDA buffers, Work/stream semantics), then
# the kill -9 fault test (two GPUs). Usage: tests/gpu/run.sh [BUILD_DIR]   (default: build)
# The build must have found CUDA and NCCL (cmake -DSPMD_WITH_NCCL=ON fails if not).
set -euo pipefail
build=${1:-build}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "tests/gpu/run.sh: no NVIDIA GPU here (nvidia-smi finds none); nothing to run" >&2
  exit 0
fi
gpus=$(nvidia-smi -L | wc -l)
cmake --build "$build" --target gpu_suite_test gpu_fault_test gpu_fault_worker spmdrun
echo "== GPU suite on $gpus GPU(s), one rank each"
SPMD_TIMEOUT=120 "$build/bin/spmdrun" --nproc-per-node "$gpus" "$build/bin/gpu_suite_test" --gtest_brief=1
echo "== kill -9 fault test"
"$build/bin/gpu_fault_test" --gtest_brief=1
echo "tests/gpu/run.sh: all passed on $gpus GPU(s)"
