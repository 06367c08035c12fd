#!/bin/sh
# Usage: ddp_example.sh SPMDRUN MODULE_DIR EXAMPLE
# The DDP example (python/examples/ddp_torchrun.py) on 2 ranks with backend "spmd": 2 epochs
# with a snapshot per epoch, then a restarted job that resumes from the snapshot at epoch 2
# and trains to epoch 4. Both runs must end with identical parameters on every rank.
spmdrun=$1 module_dir=$2 example=$3
run="$(dirname "$0")/run.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
same="identical on all 2 ranks: yes"
sh "$run" "$spmdrun" "$module_dir" 2 "$same" "$example" --epochs 2 --save-every 1 --snapshot-path "$tmp/snapshot.pt" || exit $?
out=$(sh "$run" "$spmdrun" "$module_dir" 2 "$same" "$example" --epochs 4 --save-every 1 --snapshot-path "$tmp/snapshot.pt")
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit $rc
[ "$(echo "$out" | grep -c 'resuming training from snapshot at epoch 2')" -eq 2 ] || { echo "the second job did not resume at epoch 2"; exit 1; }
[ "$(echo "$out" | grep -c 'epoch 3 |')" -ge 2 ] || { echo "the second job did not train epoch 3"; exit 1; }
