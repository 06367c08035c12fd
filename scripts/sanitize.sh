#!/usr/bin/env bash
# Builds the tests labelled "sanitize" with a sanitizer and runs them.
# Usage: scripts/sanitize.sh BUILD_DIR address|thread
set -euo pipefail
dir=$1 kind=$2
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPMD_SANITIZE="$kind" \
  -DSPMD_BUILD_EXAMPLES=OFF -DSPMD_BUILD_BENCH=OFF -DSPMD_WITH_TORCH=OFF >/dev/null
# Only the executables of sanitize-labelled tests (and what they run) are built.
targets=$(ctest --test-dir "$dir" -N -L sanitize 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p' | tr '\n' ' ')
extra=$(cat "$dir"/sanitize_extra_targets 2>/dev/null || true)
cmake --build "$dir" -j "$(nproc)" --target $targets $extra
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
ctest --test-dir "$dir" -L sanitize --output-on-failure -j "$(nproc)" --timeout 600
