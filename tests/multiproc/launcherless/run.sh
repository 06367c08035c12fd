#!/usr/bin/env bash
# Usage: run.sh ALL_REDUCE_GRADIENTS HELLO_RANKS
# 1. `mpirun -np 3` of an spmd program: ranks come from OMPI_COMM_WORLD_*, rendezvous needs
#    no configuration. 2. Three processes with Slurm's variables (as srun sets them). Both must
#    average correctly and leave no rendezvous file behind.
set -euo pipefail
allreduce=$1 hello=$2
export TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
export SPMD_TIMEOUT=30  # ranks give up on their own if a launcher dies under them
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE SPMD_STORE_ADDR SPMD_STORE_PORT
fail() { echo "FAIL: $*"; exit 1; }

if command -v mpirun >/dev/null; then
  out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe -np 3 --mca btl self,vader \
          --mca oob_tcp_if_include lo "$allreduce" 2>&1) || fail "mpirun run failed: $out"
  [[ $(grep -c 'averaged gradient .* OK' <<<"$out") == 3 ]] || fail "mpirun: expected 3 OK lines, got: $out"
  out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader \
          --mca oob_tcp_if_include lo "$hello" 2>&1) || fail "mpirun hello failed: $out"
  grep -q 'hello from rank 1 of 2: local rank 1 of 2' <<<"$out" || fail "mpirun hello: $out"
  echo "mpirun: ok"
else
  echo "mpirun: skipped (openmpi-bin not installed)"
fi

# Like srun's tasks, the ranks are children of one process (here a bash, under one timeout).
TMPDIR=$TMPDIR timeout 60 bash -c '
  prog=$1; pids=()
  for r in 0 1 2; do
    SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=$r SLURM_NODEID=0 SLURM_NNODES=1 SLURM_JOB_ID=$$ \
      SLURM_STEP_ID=0 SLURM_JOB_NODELIST=$(hostname) SLURM_TASKS_PER_NODE=3 "$prog" > "$TMPDIR/out.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || exit 1; done' bash "$allreduce" \
  || fail "a Slurm-style rank failed: $(cat "$TMPDIR"/out.*)"
[[ $(cat "$TMPDIR"/out.* | grep -c 'averaged gradient .* OK') == 3 ]] || fail "slurm: $(cat "$TMPDIR"/out.*)"
echo "slurm variables: ok"

left=$(find "$TMPDIR" -name 'spmd-*.store')
[[ -z $left ]] || fail "rendezvous files left behind: $left"
echo "launcherless: 2 passed, 0 failed"
