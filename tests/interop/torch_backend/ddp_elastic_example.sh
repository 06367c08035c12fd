#!/bin/sh
# Usage: ddp_elastic_example.sh SPMDRUN MODULE_DIR EXAMPLE
# pytorch/examples' distributed/ddp/example.py (python/examples/ddp_elastic_example.py) with
# backend "spmd", launched as its README launches it with torchrun (one node, env://), and
# again through an elastic c10d rendezvous (--nnodes 1:2, one node present, a free loopback
# port). Every rank must print the same SHA-256 of its parameters after the DDP step, and the
# expected number of ranks must report. Exit 77 (ctest: skipped) without torch.
spmdrun=$1 module_dir=$2 example=$3
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
export SPMD_PYTHON="$python" PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}"

# check NPROC NAME SPMDRUN_FLAGS...: runs the example on NPROC processes and checks the hashes.
check() {
  nproc=$1 name=$2
  shift 2
  out=$(timeout -s KILL 60 "$spmdrun" "$@" --nproc-per-node "$nproc" "$example" --local_world_size "$nproc" 2>&1)
  rc=$?
  echo "--- $name:"
  echo "$out"
  [ $rc -eq 0 ] || { echo "$name: spmdrun exited $rc"; return 1; }
  hashes=$(echo "$out" | grep "final parameters sha256 [0-9a-f]* (world_size = $nproc)")
  ranks=$(echo "$hashes" | sed -n 's/.* rank \([0-9]*\) final parameters sha256.*/\1/p' | sort -n | tr '\n' ' ')
  want=$(seq 0 $((nproc - 1)) | tr '\n' ' ')
  [ "$ranks" = "$want" ] || { echo "$name: expected ranks $want to report a hash, got: $ranks"; return 1; }
  n=$(echo "$hashes" | sed 's/.*final parameters sha256 \([0-9a-f]*\).*/\1/' | sort -u | wc -l)
  [ "$n" -eq 1 ] || { echo "$name: the ranks' parameter hashes differ"; return 1; }
  echo "$name: $nproc ranks, identical parameters"
}

check 2 "one node, env://" --nnodes 1 || exit 1
# A loopback port free a moment ago; spmdrun binds it (a clash fails, never hangs).
port=$("$python" "$(dirname "$0")/../../common/free_port.py")
check 3 "elastic c10d rendezvous, --nnodes 1:2" --nnodes 1:2 --rdzv-backend c10d \
  --rdzv-endpoint "127.0.0.1:$port" --rdzv-id ddp-elastic-example --max-restarts 1 || exit 1
