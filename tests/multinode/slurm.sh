#!/usr/bin/env bash
# Slurm as users run it, on the emulated cluster: slurmctld on node0 and one slurmd per node
# (NodeName=node<i>, NodeAddr = the namespace's address, 4 CPUs each by config_overrides,
# AuthType=auth/none, proctrack/linuxproc, task/none), then
#  1. srun -n 4 PROG on one node: spmd::init from Slurm's variables, no MASTER_ADDR/PORT
#     (the ranks meet in a file store named after their launcher);
#  2. srun -N 3 -n 6 PROG: across nodes, MASTER_ADDR = the step's first host and MASTER_PORT
#     derived from the job and step ids (spmd::slurm_master_port);
#  3. srun -N 3 --ntasks-per-node 1 spmdrun --nproc-per-node 2 PROG: spmdrun reads the node
#     count, its node rank and the rendezvous point from the step;
#  4. the sbatch script of docs/multinode.md (srun + spmdrun + train_mlp), sbatch --wait;
#  5. srun -N 3 -n 6 python3 SCRIPT: a torch script with init_method="spmd://" (where the
#     build has the spmd_torch module and Debian's python3 has torch).
# Usage: slurm.sh BIN_DIR   (exit 77 = skipped: no namespaces or no Slurm here)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3 slurmctld slurmd srun sbatch sinfo
passed=0

# The cluster's configuration: everything under $WORK, nothing in /etc/slurm.
mkdir -p "$WORK/state" "$WORK/spool-node0" "$WORK/spool-node1" "$WORK/spool-node2"
{
  cat <<EOF
ClusterName=spmdmn
SlurmctldHost=node0($(node_addr 0))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool-%n
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd-%n.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=5
PartitionName=mn Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  for i in 0 1 2; do echo "NodeName=$(node_name $i) NodeAddr=$(node_addr $i) CPUs=4 State=UNKNOWN"; done
} >"$WORK/slurm.conf"
export SLURM_CONF=$WORK/slurm.conf
bg_on_node 0 "$WORK/slurmctld.out" slurmctld -D -i -f "$SLURM_CONF"
for i in 0 1 2; do bg_on_node "$i" "$WORK/slurmd$i.out" slurmd -D -f "$SLURM_CONF" -N "$(node_name $i)"; done
all_idle() { [[ $(on_node 0 sinfo -h -o '%T %D' 2>/dev/null) == "idle 3" ]]; }
wait_until 60 all_idle || fail "the Slurm nodes never became idle: $(on_node 0 sinfo 2>&1; tail -5 "$WORK"/slurmd*.out "$WORK/slurmctld.out")"
echo "slurm: 3 nodes idle"

# Runs srun on node0 (the submit host) under a time limit; output in $WORK/NAME.
slurm_run() {
  local name=$1
  shift
  on_node 0 timeout -s KILL 150 "$@" >"$WORK/$name" 2>&1 || fail "$name: '$*' failed: $(tail -30 "$WORK/$name")"
}
expect_lines() {  # NAME REGEX N
  local got
  got=$(grep -cE "$2" "$WORK/$1" || true)
  [[ $got == "$3" ]] || fail "$1: expected $3 lines matching '$2', got $got: $(tail -30 "$WORK/$1")"
}
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE
export SPMD_TIMEOUT=60

# 1. One node, no configuration.
slurm_run srun1 srun -N 1 -n 4 "$BIN/hello_ranks"
expect_lines srun1 'hello from rank [0-3] of 4: local rank [0-3] of 4' 4
echo "ok: srun -n 4 (one node, launcherless file store)"
passed=$((passed + 1))

# 2. Three nodes, MASTER_ADDR/PORT derived from Slurm's variables.
slurm_run srun3 srun -N 3 -n 6 --ntasks-per-node 2 "$TESTS_BIN/spmd_collectives_worker" check
expect_lines srun3 'rank [0-5] ok' 6
slurm_run srun3hosts srun -N 3 -n 6 --ntasks-per-node 2 "$BIN/hello_ranks"
for i in 0 1 2; do expect_lines srun3hosts "node $i of 3, host node$i\$" 2; done
echo "ok: srun -N 3 -n 6 (MASTER_ADDR/PORT from SLURM_STEP_NODELIST and the job id)"
passed=$((passed + 1))

# 3. srun starts one spmdrun per node; spmdrun takes nodes, node rank and master from Slurm.
slurm_run spmdrun3 srun -N 3 --ntasks-per-node 1 "$SPMDRUN" --nproc-per-node 2 "$TESTS_BIN/spmd_collectives_worker" check
expect_lines spmdrun3 'rank [0-5] ok' 6
echo "ok: srun -N 3 --ntasks-per-node 1 spmdrun --nproc-per-node 2 (node rank and count from Slurm)"
passed=$((passed + 1))

# 4. The sbatch script users are given in docs/multinode.md.
cat >"$WORK/train.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=train_mlp
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --output=$WORK/train.out
# One spmdrun per node; spmdrun reads the node count, its node rank and node 0's address
# from Slurm, and starts 2 processes on its node.
srun spmdrun --nproc-per-node 2 train_mlp --epochs 2 --samples 2048 --checkpoint ''
EOF
PATH=$BIN:$PATH slurm_run sbatch sbatch --wait "$WORK/train.sbatch"
grep -qE 'parameter checksum .* identical on all 6 ranks: yes' "$WORK/train.out" ||
  fail "sbatch: no checksum line: $(tail -30 "$WORK/train.out")"
echo "ok: sbatch script (srun spmdrun train_mlp on 3 nodes x 2): $(grep -oE 'parameter checksum [^,]+' "$WORK/train.out")"
passed=$((passed + 1))

# 5. torch without a launcher of spmd's: srun starts the Python ranks, spmd:// reads Slurm's variables.
if [[ -d $BIN/../python/spmd_torch ]] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  PYTHONPATH=$BIN/../python slurm_run srunpy srun -N 3 -n 6 --ntasks-per-node 2 /usr/bin/python3 \
    "$(cd "$(dirname "$0")/.." && pwd)/interop/torch_backend/launcherless.py"
  # Counted as matches, not lines: tasks' lines may arrive joined.
  got=$(grep -oE 'spmd:// rank [0-5] of 6, local rank [01] of 2: all_reduce ok' "$WORK/srunpy" | wc -l)
  [[ $got == 6 ]] || fail "srunpy: expected 6 ranks' lines, got $got: $(tail -30 "$WORK/srunpy")"
  echo "ok: srun -N 3 -n 6 python3 (torch, init_method spmd://)"
  passed=$((passed + 1))
else
  echo "skipped: srun python3 with spmd:// (no spmd_torch module in this build, or no torch)"
fi

echo "multinode slurm: $passed passed, 0 failed"
