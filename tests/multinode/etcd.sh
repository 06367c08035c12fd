#!/usr/bin/env bash
# The etcd rendezvous across emulated nodes, with a 3-member etcd cluster, one member per node
# (as a deployment spreads them over machines); every spmdrun is given all three endpoints.
#  1. the DDP demo (train_mlp, 3 nodes x 2 ranks) through etcd ends with the same parameters, bit
#     for bit, as through c10d (SPMD_DETERMINISTIC=1);
#  2. an etcd member is lost: the member every node names first is killed while a training job
#     runs; then a worker is killed, and the restart's rendezvous runs on the two members left:
#     the job resumes and trains to the end;
#  3. a node is lost: the job's node rank 0 (it hosts the workers' store; with c10d its loss is
#     the job's end) dies whole mid-training — every process of its namespace, its etcd member
#     among them; the other two nodes resume from the last checkpoint as a 2-node job and end
#     with the same parameters as a clean 2-node run from a copy of that checkpoint;
#  4. etcd stopped: with every member gone, a new job says it cannot reach etcd, naming the
#     endpoints, at its join timeout.
# Usage: etcd.sh BIN_DIR   (exit 77 = skipped: no namespaces, or no etcd)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3 etcd etcdctl
export SPMD_TIMEOUT=60
passed=0
ENDPOINTS="$(node_addr 0):2379,$(node_addr 1):2379,$(node_addr 2):2379"
MEMBERS="m0=http://$(node_addr 0):2380,m1=http://$(node_addr 1):2380,m2=http://$(node_addr 2):2380"
ETCD_PID=()

etcd_member() {  # I: starts (or restarts, on its data) node I's member
  local i=$1 a
  a=$(node_addr "$i")
  bg_on_node "$i" "$WORK/etcd.$i" etcd --name "m$i" --data-dir "$WORK/etcd-data.$i" \
    --listen-client-urls "http://$a:2379" --advertise-client-urls "http://$a:2379" \
    --listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
    --initial-cluster "$MEMBERS" --initial-cluster-state new --initial-cluster-token "$MN_ID"
  ETCD_PID[$i]=$BG_PID
}
healthy() {  # the members given answer, from node 0's namespace
  on_node "${2:-0}" env ETCDCTL_API=3 etcdctl --endpoints "$1" --command-timeout 2s endpoint health >/dev/null 2>&1
}
for i in 0 1 2; do etcd_member "$i"; done
wait_until 60 healthy "$ENDPOINTS" || fail "the etcd cluster did not come up: $(tail -n 5 "$WORK"/etcd.*)"

# etcd_node NAME NODE [flags...] PROGRAM ARGS: one node of an elastic etcd job, in the background.
NODE_PID=()
etcd_node() {
  local name=$1 node=$2
  shift 2
  bg_on_node "$node" "$WORK/$name.$node" timeout -s KILL 150 "$SPMDRUN" --nnodes 2:3 --nproc-per-node 2 \
    --rdzv-backend etcd --rdzv-endpoint "$ENDPOINTS" --rdzv-id "$name" \
    --rdzv-conf last_call_timeout=2,peer_timeout=4 --grace-period 2 "$@"
  NODE_PID[$node]=$BG_PID
}
expect_exit() {  # NAME NODE CODE
  local rc
  wait "${NODE_PID[$2]}" && rc=0 || rc=$?
  [[ $rc == "$3" ]] || fail "$1: node $2 exited $rc, expected $3: $(tail -30 "$WORK/$1.$2")"
}
wait_output() {  # NAME REGEX SECONDS
  local name=$1 re=$2
  seen() { grep -qE "$re" "$WORK/$name".* 2>/dev/null; }
  wait_until "$3" seen || fail "$name: never printed '$re': $(tail -n 20 "$WORK/$name".*)"
}
export SPMD_DETERMINISTIC=1

# 1. The DDP demo through etcd = through c10d.
mlp=("$BIN/train_mlp" --epochs 2 --samples 2048)
per_node_job demo 3 "$SPMDRUN" --nnodes 3 --nproc-per-node 2 --rdzv-backend etcd --rdzv-endpoint "$ENDPOINTS" \
  --rdzv-id demo "${mlp[@]}" --checkpoint "$WORK/demo_etcd.ckpt" --save-parameters "$WORK/params_etcd" || fail "the etcd job failed: $(tail -n 20 "$WORK"/demo.*)"
c10d_job demo_c10d 3 2 "${mlp[@]}" --checkpoint "$WORK/demo_c10d.ckpt" --save-parameters "$WORK/params_c10d" ||
  fail "the c10d job failed: $(tail -n 20 "$WORK"/demo_c10d.*)"
for r in 0 1 2 3 4 5; do
  cmp -s "$WORK/params_etcd.$r" "$WORK/params_c10d.$r" || fail "rank $r's parameters differ between etcd and c10d"
done
echo "ok: the DDP demo, 3 nodes x 2 ranks through a 3-member etcd: parameters = through c10d ($(md5sum <"$WORK/params_etcd.0" | cut -c1-12))"
passed=$((passed + 1))

# 2. An etcd member lost while the job runs; the restart's rendezvous runs on the other two.
for i in 0 1 2; do
  etcd_node members "$i" --max-restarts 1 "${mlp[@]}" --epochs 4 --checkpoint "$WORK/ckpt_members" --hang-after-epoch 1
done
# The job holds still (its last rank stops after epoch 2) while member m0 dies; then one of its
# workers is killed, and the restart needs a rendezvous: on m1 and m2.
wait_output members 'stops answering after epoch 2' 90
kill -9 "${ETCD_PID[0]}"
healthy "$(node_addr 0):2379" && fail "member m0 still answers after kill -9"
pkill -9 -n -f "checkpoint $WORK/ckpt_members" || fail "members: no worker to kill"
for i in 0 1 2; do expect_exit members "$i" 0; done
grep -q 'restarting (1 of 1 restarts)' "$WORK"/members.* || fail "members: no restart: $(tail -n 20 "$WORK"/members.*)"
grep -q 'resumed from .*: 2 epoch(s) done' "$WORK"/members.* || fail "members: the restart did not resume from epoch 2"
grep -q 'epoch  4/4' "$WORK"/members.* || fail "members: the restarted job did not train to the end"
echo "ok: etcd member m0 killed mid-job: the restart met on the other two members and trained to the end"
passed=$((passed + 1))
etcd_member 0
wait_until 60 healthy "$ENDPOINTS" || fail "member m0 did not come back: $(tail -n 5 "$WORK/etcd.0")"

# 3. The job's node rank 0 lost whole, mid-training: the others resume as 2 nodes.
ckpt=$WORK/mlp.ckpt
train=("$BIN/train_mlp" --epochs 4 --samples 2048 --checkpoint "$ckpt")
for i in 0 1 2; do etcd_node train "$i" --max-restarts 1 "${train[@]}" --hang-after-epoch 1 --save-parameters "$WORK/params_elastic"; done
# The last rank stops after epoch 2's checkpoint and barrier: no later checkpoint can be written.
wait_output train 'stops answering after epoch 2' 90
first=$(grep -l '^\[0\]:' "$WORK"/train.* | head -1)
first=${first##*.}
[[ $first =~ ^[0-2]$ ]] || fail "train: no node printed rank 0's lines"
cp "$ckpt" "$WORK/mlp.epoch2.ckpt"
mn_kill_ns "$(mn_ns "$first")"
survivors=()
for i in 0 1 2; do ((i != first)) && survivors+=("$i"); done
for i in "${survivors[@]}"; do expect_exit train "$i" 0; done
grep -q 'resumed from .*: 2 epoch(s) done' "$WORK/train.${survivors[0]}" "$WORK/train.${survivors[1]}" ||
  fail "train: the survivors did not resume from epoch 2: $(tail -n 30 "$WORK/train.${survivors[0]}")"
grep -qE 'stopped answering|lease ran out' "$WORK/train.${survivors[0]}" "$WORK/train.${survivors[1]}" ||
  echo "note: the survivors saw the loss through their workers first (no heartbeat line)"
# The clean 2-node run from a copy of the checkpoint, on the same two nodes, through etcd.
pids=()
for i in "${survivors[@]}"; do
  bg_on_node "$i" "$WORK/clean.$i" timeout -s KILL 150 "$SPMDRUN" --nnodes 2 --nproc-per-node 2 --rdzv-backend etcd \
    --rdzv-endpoint "$ENDPOINTS" --rdzv-id clean "${train[@]/$ckpt/$WORK/mlp.epoch2.ckpt}" --save-parameters "$WORK/params_clean"
  pids+=("$BG_PID")
done
for p in "${pids[@]}"; do wait "$p" || fail "the clean 2-node run failed: $(tail -n 20 "$WORK"/clean.*)"; done
grep -q 'resumed from .*: 2 epoch(s) done' "$WORK"/clean.* || fail "the clean run did not resume from epoch 2"
for r in 0 1 2 3; do
  cmp -s "$WORK/params_elastic.$r" "$WORK/params_clean.$r" || fail "rank $r: the survivors' parameters differ from the clean 2-node run's"
done
echo "ok: node $first (node rank 0, with its etcd member) killed mid-training: 2 nodes resumed from epoch 2, parameters = a clean 2-node run's"
passed=$((passed + 1))

# 4. etcd stopped: a new job names the endpoints and gives up at its join timeout.
for i in 0 1 2; do mn_kill_ns "$(mn_ns "$i")"; done
on_node 1 timeout -s KILL 60 "$SPMDRUN" --nnodes 2 --rdzv-backend etcd --rdzv-endpoint "$ENDPOINTS" --rdzv-id gone \
  --rdzv-conf join_timeout=4 true >"$WORK/gone.out" 2>&1 && fail "a job without etcd succeeded"
grep -q "could not reach etcd at $(node_addr 0):2379, $(node_addr 1):2379, $(node_addr 2):2379 within 4 s" "$WORK/gone.out" ||
  fail "no clear error without etcd: $(cat "$WORK/gone.out")"
echo "ok: etcd stopped: '$(grep -o 'could not reach etcd at [^(]*' "$WORK/gone.out")'"
passed=$((passed + 1))

echo "multinode etcd: $passed passed, 0 failed"
