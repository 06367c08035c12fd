#!/bin/sh
# init_method="spmd://" without spmdrun: a torch script (launcherless.py) started by real
# `mpirun -np 2`, and by three processes with Slurm's variables as srun sets them (children of
# one process, as srun's tasks are); then a job spread over nodes that names no meeting place
# gets the clear error. Usage: launcherless.sh MODULE_DIR   (exit 77: no torch here)
set -u
module_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
py=${SPMD_PYTHON:-/usr/bin/python3}
"$py" -c 'import torch' 2>/dev/null || { echo "skipped: $py has no torch"; exit 77; }
export PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}" SPMD_TIMEOUT=60
export TMPDIR=$(mktemp -d)
trap 'rm -rf "$TMPDIR"' EXIT
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK SPMD_STORE_ADDR SPMD_STORE_PORT
fail() { echo "FAIL: $*"; exit 1; }
mpirun_part=skipped
if command -v mpirun >/dev/null; then
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader --mca oob_tcp_if_include lo \
          "$py" "$here/launcherless.py" 2>&1) || fail "mpirun -np 2 python3 launcherless.py: $out"
  # Counted as matches, not lines: mpirun's forwarding may join two ranks' lines into one.
  [ "$(printf '%s\n' "$out" | grep -o 'spmd:// rank [01] of 2, local rank [01] of 2: all_reduce ok' | wc -l)" = 2 ] ||
    fail "mpirun: expected 2 ok lines: $out"
  mpirun_part=ok
  echo "mpirun -np 2 python3: ok"
fi
timeout 120 sh -c '
  py=$1 script=$2; pids=""
  for r in 0 1 2; do
    SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=$r SLURM_NODEID=0 SLURM_NNODES=1 SLURM_JOB_ID=$$ SLURM_STEP_ID=0 \
      SLURM_JOB_NODELIST=$(hostname) SLURM_TASKS_PER_NODE=3 "$py" "$script" >"$TMPDIR/out.$r" 2>&1 &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || exit 1; done' sh "$py" "$here/launcherless.py" || fail "a Slurm-style rank failed: $(cat "$TMPDIR"/out.*)"
[ "$(cat "$TMPDIR"/out.* | grep -c 'spmd:// rank [0-2] of 3, local rank [0-2] of 3: all_reduce ok')" = 3 ] ||
  fail "slurm variables: $(cat "$TMPDIR"/out.*)"
echo "slurm variables, 3 ranks: ok"
left=$(find "$TMPDIR" -name 'spmd-*')
[ -z "$left" ] || fail "rendezvous files left behind: $left"
# Open MPI's variables of a job on two nodes, no MASTER_ADDR: there is no meeting place to guess.
out=$(OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 \
      OMPI_COMM_WORLD_NODE_RANK=0 timeout 60 "$py" "$here/launcherless.py" 2>&1) && fail "a 2-node job without MASTER_ADDR started: $out"
printf '%s\n' "$out" | grep -q "names no meeting place: set MASTER_ADDR and MASTER_PORT" || fail "no clear error: $out"
echo "2 nodes without MASTER_ADDR: the clear error"
if [ $mpirun_part = skipped ]; then echo "skipped: mpirun is not installed (openmpi-bin); the other checks passed"; exit 77; fi
echo "launcherless torch: 3 passed, 0 failed"
