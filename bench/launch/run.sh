#!/bin/sh
# Builds what the launch benchmark needs and runs it: sh bench/launch/run.sh [build] [args...]
set -e
build="${1:-build}"
[ $# -gt 0 ] && shift
cmake --build "$build" --target spmdrun spmd_launch_init_barrier >/dev/null
exec python3 "$(dirname "$0")/run.py" --build "$build" "$@"
