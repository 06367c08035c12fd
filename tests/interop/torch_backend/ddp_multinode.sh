#!/bin/sh
# Usage: ddp_multinode.sh SPMDRUN MODULE_DIR EXAMPLE
# pytorch/examples' multinode.py (python/examples/ddp_multinode.py) with backend "spmd" as a
# two-node job on this host: two spmdrun launchers, 2 processes each, meeting at a c10d
# rendezvous endpoint on a free loopback port. 3 epochs with a snapshot every epoch, then a
# second two-node job that resumes from the snapshot and trains to epoch 4. Each job must
# report 4 ranks (0-3, two per node) with the same SHA-256 of the final parameters.
# Exit 77 (ctest: skipped) without torch.
spmdrun=$1 module_dir=$2 example=$3
python="${SPMD_PYTHON:-/usr/bin/python3}"
"$python" -c "import torch.distributed" 2>/dev/null || { echo "torch not importable with $python: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SPMD_PYTHON="$python" PYTHONPATH="$module_dir${PYTHONPATH:+:$PYTHONPATH}"

# Runs one two-node job with id $1 and the example's arguments after it; both launchers'
# output goes to $tmp/$1.node{a,b}. Fails unless both launchers exit 0 and 4 distinct ranks
# 0-3 print the same parameter hash.
job() {
  id=$1
  shift
  # A loopback port free a moment ago; the first launcher binds it (a clash fails, never hangs).
  port=$("$python" "$(dirname "$0")/../../common/free_port.py")
  for node in a b; do
    timeout -s KILL 90 "$spmdrun" --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d \
      --rdzv-endpoint "127.0.0.1:$port" --rdzv-id "$id" --log-dir "$tmp/logs.$id.$node" \
      "$example" "$@" >"$tmp/$id.node$node" 2>&1 &
    eval "pid_$node=\$!"
  done
  wait "$pid_a"; rc_a=$?
  wait "$pid_b"; rc_b=$?
  for node in a b; do echo "--- job $id, launcher $node:"; cat "$tmp/$id.node$node"; done
  [ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] || { echo "job $id: launchers exited $rc_a and $rc_b"; return 1; }
  cat "$tmp/$id.nodea" "$tmp/$id.nodeb" | grep 'final parameters sha256' >"$tmp/$id.hashes"
  ranks=$(sed -n 's/.*\[RANK\([0-9]*\)\] final parameters sha256.*/\1/p' "$tmp/$id.hashes" | sort -n | tr '\n' ' ')
  [ "$ranks" = "0 1 2 3 " ] || { echo "job $id: expected ranks 0 1 2 3 to report a hash, got: $ranks"; return 1; }
  n=$(sed 's/.*final parameters sha256 \([0-9a-f]*\).*/\1/' "$tmp/$id.hashes" | sort -u | wc -l)
  [ "$n" -eq 1 ] || { echo "job $id: the ranks' parameter hashes differ"; return 1; }
  [ "$(grep -c 'of 4, node [01], local rank [01])' "$tmp/$id.hashes")" -eq 4 ] || { echo "job $id: not 4 ranks of a world of 4 on 2 nodes"; return 1; }
  echo "job $id: 4 ranks on 2 nodes, identical parameters: $(sed 's/.*final parameters sha256 \([0-9a-f]*\).*/\1/' "$tmp/$id.hashes" | head -1)"
}

snap="$tmp/snapshot.pt"
job ddpmn1 3 1 --snapshot_path "$snap" --dataset_size 512 || exit 1
job ddpmn2 4 1 --snapshot_path "$snap" --dataset_size 512 || exit 1
# Upstream's snapshot records the last saved epoch (2), which the resumed job trains again.
[ "$(cat "$tmp/ddpmn2.nodea" "$tmp/ddpmn2.nodeb" | grep -c 'Resuming training from snapshot at Epoch 2')" -eq 4 ] ||
  { echo "the second job did not resume from the snapshot at epoch 2 on every rank"; exit 1; }
[ "$(cat "$tmp/ddpmn2.nodea" "$tmp/ddpmn2.nodeb" | grep -c '\] Epoch 3 |')" -eq 4 ] ||
  { echo "the second job did not train epoch 3 on every rank"; exit 1; }
