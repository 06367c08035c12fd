#!/usr/bin/env bash
# The flight recorder's and the trace's cost per call, in instructions counted by callgrind
# (repeatable on a busy machine, where timings are not). Usage:
#   bash bench/observe/recorder_cost.sh [BUILD_DIR] [N1] [N2]
#
# 1. One rank, spmd-bench -c all_reduce -s 8: the whole call path (validation, numbering,
#    the recorder, the backend) with nothing to wait for. Each setting runs twice, with N1 and
#    N2 timed iterations (no warm-up); (Ir(N2) - Ir(N1)) / (N2 - N1) is the cost of one call,
#    start-up cancels out. Settings: SPMD_FLIGHT_RECORDER=0 (off), the default (256), and
#    SPMD_TRACE on top.
# 2. Two ranks under spmdrun (shared memory), N2 iterations: the instructions spent inside
#    spmd::observe functions per call on rank 0 (callgrind --toggle-collect), recorder on and
#    off. Waiting for the peer spins a varying number of times, so whole-run totals of two
#    ranks are not repeatable; the recorder's own share is.
set -euo pipefail
build=${1:-build}
n1=${2:-2000}
n2=${3:-12000}
bench="$build/bin/spmd-bench"
spmdrun="$build/bin/spmdrun"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

total_ir() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }

one_rank() {  # $1 = label, rest = env assignments
  local label=$1; shift
  local a b
  for n in "$n1" "$n2"; do
    env -u SPMD_STORE_ADDR -u MASTER_ADDR "$@" valgrind --tool=callgrind --callgrind-out-file="$work/$label.$n" \
      "$bench" -c all_reduce -s 8 -n "$n" -w 0 >/dev/null 2>&1
  done
  a=$(total_ir "$work/$label.$n1")
  b=$(total_ir "$work/$label.$n2")
  awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" -v l="$label" \
    'BEGIN { printf "  %-28s %8.1f instructions per all_reduce\n", l, (b - a) / (n2 - n1) }'
}

echo "1 rank, all_reduce of 8 bytes, whole call path (callgrind, N = $n1 and $n2):"
one_rank "recorder off" SPMD_FLIGHT_RECORDER=0
one_rank "recorder on (256)" SPMD_FLIGHT_RECORDER=256
one_rank "recorder on + SPMD_TRACE" SPMD_FLIGHT_RECORDER=256 SPMD_TRACE="$work/trace"

two_ranks() {  # $1 = label, rest = env assignments
  local label=$1; shift
  env "$@" "$spmdrun" --nproc-per-node 2 valgrind --tool=callgrind --toggle-collect='spmd::observe::*' \
    --callgrind-out-file="$work/two.%q{RANK}" "$bench" -c all_reduce -s 8 -n "$n2" -w 0 >/dev/null 2>&1
  awk -v ir="$(total_ir "$work/two.0")" -v n="$n2" -v l="$label" \
    'BEGIN { printf "  %-28s %8.1f instructions per all_reduce inside spmd::observe (rank 0)\n", l, ir / n }'
}

echo "2 ranks (shared memory), all_reduce of 8 bytes, N = $n2:"
two_ranks "recorder off" SPMD_FLIGHT_RECORDER=0
two_ranks "recorder on (256)" SPMD_FLIGHT_RECORDER=256
