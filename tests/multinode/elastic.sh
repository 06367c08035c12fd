#!/usr/bin/env bash
# Elastic membership across emulated nodes (c10d rendezvous at node0, --nnodes 2:3, 2 ranks
# per node, spmd_elastic_worker: all_reduce over each round's world):
#  1. scale-up: node0 and node1 run a world of 4; node2 arrives later, the running nodes stop
#     their workers and all three run round 1 as a world of 6 (restart count still 0);
#  2. scale-down: three nodes run a world of 6; node2 dies whole (every process in its
#     namespace SIGKILLed: only its missing heartbeat tells), node0 and node1 go on as a
#     world of 4 (restart count 1, --max-restarts 1);
#  3. scale-down mid-training: train_mlp (DDP) on 3 nodes writes a checkpoint every epoch; after
#     epoch 2 a rank of node2 stops answering and node2 is killed whole; node0 and node1 resume
#     from that checkpoint as a world of 4 and end with the same parameters, bit for bit, as a
#     clean world-4 run resumed from a copy of the same checkpoint (SPMD_DETERMINISTIC=1).
# Usage: elastic.sh BIN_DIR   (exit 77 = skipped: no namespaces here)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3
export SPMD_TIMEOUT=60
passed=0

# elastic_node NAME NODE WAIT_WORLD [flags]: one node of job NAME in the background; pid in NODE_PID[NODE].
elastic_node() {
  local name=$1 node=$2 wait_world=$3
  shift 3
  bg_on_node "$node" "$WORK/$name.$node" timeout -s KILL 120 "$SPMDRUN" --nnodes 2:3 --nproc-per-node 2 \
    --rdzv-backend c10d --rdzv-endpoint "$(node_addr 0):$MN_PORT" --rdzv-id "$name" \
    --rdzv-conf last_call_timeout=1,peer_timeout=4 --grace-period 2 "$@" \
    "$TESTS_BIN/spmd_elastic_worker" --wait-if-world "$wait_world"
  NODE_PID[$node]=$BG_PID
}
lines() { cat "$WORK/$1".* | grep -cE "$2" || true; }
expect_lines() {  # NAME REGEX N
  [[ $(lines "$1" "$2") == "$3" ]] || fail "$1: expected $3 lines matching '$2', got $(lines "$1" "$2"): $(cat "$WORK/$1".* | tail -40)"
}
wait_lines() {  # NAME REGEX N SECONDS
  local name=$1 re=$2 n=$3
  enough() { (($(lines "$name" "$re") >= n)); }
  wait_until "$4" enough || fail "$name: never saw $n lines matching '$re': $(cat "$WORK/$name".* | tail -40)"
}
expect_exit() {  # NAME NODE CODE
  local rc
  wait "${NODE_PID[$2]}" && rc=0 || rc=$?
  [[ $rc == "$3" ]] || fail "$1: node $2 exited $rc, expected $3: $(tail -30 "$WORK/$1.$2")"
}

# 1. Scale-up: a late node joins the next round.
NODE_PID=()
elastic_node grow 0 4
elastic_node grow 1 4
wait_lines grow 'elastic rank [0-3] of 4: .*all_reduce ok' 4 60
elastic_node grow 2 4
for i in 0 1 2; do expect_exit grow "$i" 0; done
expect_lines grow 'elastic rank [0-5] of 6: node [0-2] of 3, host node[0-2], restart 0, prefix spmd/grow/1, all_reduce ok' 6
grep -q 'this node joins the next round' "$WORK/grow.2" || fail "grow: node 2 did not say it waits for the next round: $(cat "$WORK/grow.2")"
grep -q 'waiting to join; stopped this node' "$WORK/grow.0" || fail "grow: node 0 did not say why it stopped: $(cat "$WORK/grow.0")"
echo "ok: scale-up across namespaces: world 4 -> 6, restart count 0"
passed=$((passed + 1))

# 2. Scale-down: a node dies whole, the others go on with fewer.
NODE_PID=()
for i in 0 1 2; do elastic_node shrink "$i" 6 --max-restarts 1; done
wait_lines shrink 'elastic rank [0-5] of 6: .*all_reduce ok' 6 60
mn_kill_ns "$(mn_ns 2)"
for i in 0 1; do expect_exit shrink "$i" 0; done
expect_lines shrink 'elastic rank [0-3] of 4: node [01] of 2, host node[01], restart 1, prefix spmd/shrink/1, all_reduce ok' 4
grep -qE "stopped answering|node 2|node2" "$WORK/shrink.0" || fail "shrink: node 0 never said which node it lost: $(cat "$WORK/shrink.0")"
echo "ok: scale-down across namespaces: node 2 killed whole, world 6 -> 4, restart count 1"
passed=$((passed + 1))

# 3. Scale-down mid-training, resumed from the checkpoint = a clean run from it.
NODE_PID=()
export SPMD_DETERMINISTIC=1
ckpt=$WORK/mlp.ckpt
mlp=("$BIN/train_mlp" --epochs 4 --samples 2048 --checkpoint "$ckpt")
for i in 0 1 2; do
  bg_on_node "$i" "$WORK/train.$i" timeout -s KILL 120 "$SPMDRUN" --nnodes 2:3 --nproc-per-node 2 \
    --rdzv-backend c10d --rdzv-endpoint "$(node_addr 0):$MN_PORT" --rdzv-id train \
    --rdzv-conf last_call_timeout=1,peer_timeout=4 --grace-period 2 --max-restarts 1 \
    "${mlp[@]}" --hang-after-epoch 1 --save-parameters "$WORK/elastic"
  NODE_PID[$i]=$BG_PID
done
# Rank 5 (node2) stops after epoch 2's checkpoint and barrier: no later checkpoint can be written
# until the survivors restart, so the file copied now is the one they resume from.
wait_lines train 'epoch  2/4 .*checkpoint saved' 1 90
wait_lines train 'stops answering after epoch 2' 1 30
cp "$ckpt" "$WORK/mlp.epoch2.ckpt"
mn_kill_ns "$(mn_ns 2)"
for i in 0 1; do expect_exit train "$i" 0; done
# Rank 0 of the new round is on whichever survivor closed the rendezvous first.
grep -q 'resumed from .*: 2 epoch(s) done' "$WORK/train.0" "$WORK/train.1" ||
  fail "train: the survivors did not resume from epoch 2: $(tail -n 30 "$WORK/train.0" "$WORK/train.1")"
timeout -s KILL 120 "$SPMDRUN" --nproc-per-node 4 "${mlp[@]/$ckpt/$WORK/mlp.epoch2.ckpt}" --save-parameters "$WORK/clean" \
  >"$WORK/clean.out" 2>&1 || fail "the clean world-4 run failed: $(tail -30 "$WORK/clean.out")"
grep -q 'resumed from .*: 2 epoch(s) done' "$WORK/clean.out" || fail "the clean run did not resume from epoch 2: $(cat "$WORK/clean.out")"
cmp -s "$WORK/elastic.0" "$WORK/clean.0" || fail "scale-down run and clean run ended with different parameters"
for r in 1 2 3; do cmp -s "$WORK/elastic.0" "$WORK/elastic.$r" || fail "after scale-down, rank $r's parameters differ from rank 0's"; done
unset SPMD_DETERMINISTIC
echo "ok: scale-down mid-training: world 6 -> 4 from the epoch-2 checkpoint, parameters = a clean world-4 run's"
passed=$((passed + 1))

echo "multinode elastic: $passed passed, 0 failed"
