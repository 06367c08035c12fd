#!/usr/bin/env bash
# Failures between emulated nodes (3 nodes × 2 ranks running an all_reduce loop):
#  1. kill -9 of node 1's spmdrun: the other nodes' spmdruns end within 10 s, exit 137, and
#     their report names node 1 (its host name, node1);
#  2. node 2 dies whole (SIGKILL to every process in its namespace, as a power cut would): the
#     others end within 10 s with a report that names a rank of node 2;
#  3. node 2's cable is cut (`ip link set eth0 down`): spmdrun's hang watch (--hang-timeout 2)
#     blames a rank of node 2, or a worker's Timeout (SPMD_TIMEOUT=10) names one; both other
#     spmdruns end with a report; node 2 ends too (it can reach nobody);
#  4. the same cut during 16 MiB all_reduces (hier's pipelined path: the leaders' phase on a
#     thread of its own): the same ends, no node left running;
#  5. a rank of node 0 exits 3 while node 1's worker ignores SIGTERM for a long grace period:
#     node 1 exits 3 and names the other node's failure (node 0 keeps the store until node 1
#     has read the verdict, however long its workers took to stop).
# Usage: failures.sh BIN_DIR   (exit 77 = skipped: no namespaces here)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3
passed=0

# start_loop NAME [spmdrun flags]: the all_reduce loop on 3 nodes × 2, static rendezvous, in the
# background; waits until all 6 ranks are in the loop. Node i's launcher pid is in LOOP_PID[i].
start_loop() {
  local name=$1 i
  shift
  LOOP_PID=()
  for ((i = 0; i < 3; ++i)); do
    bg_on_node "$i" "$WORK/$name.$i" "$SPMDRUN" --nnodes 3 --node-rank "$i" --nproc-per-node 2 \
      --master-addr "$(node_addr 0)" --master-port "$MN_PORT" --grace-period 2 "$@" "$TESTS_BIN/all_reduce_loop"
    LOOP_PID[$i]=$BG_PID  # ip netns exec, unshare and sh all exec: this is spmdrun's own pid
  done
  for ((i = 0; i < 3; ++i)); do
    wait_for_line "$WORK/$name.$i" 'READY PID=' 60 || fail "$name: node $i never got ready: $(cat "$WORK/$name.$i")"
  done
  local deadline=$((SECONDS + 60))
  until [[ $(cat "$WORK/$name".* | grep -c 'READY PID=') == 6 ]]; do
    ((SECONDS < deadline)) || fail "$name: not every rank got ready: $(cat "$WORK/$name".*)"
    sleep 0.1
  done
}

# expect_end NAME NODE SECONDS CODE: node NODE's spmdrun ends within SECONDS with exit CODE
# ("" = any non-zero).
expect_end() {
  local name=$1 node=$2 secs=$3 code=$4 rc
  wait_pid "${LOOP_PID[$node]}" "$secs" && rc=0 || rc=$?
  [[ $rc != 254 ]] || fail "$name: node $node still ran $secs s after the failure: $(tail -20 "$WORK/$name.$node")"
  [[ $rc != 0 ]] || fail "$name: node $node exited 0"
  [[ -z $code || $rc == "$code" ]] || fail "$name: node $node exited $rc, expected $code: $(tail -30 "$WORK/$name.$node")"
}

# 1. kill -9 of one node's spmdrun.
start_loop kill9
kill -9 "${LOOP_PID[1]}"
t0=$SECONDS
expect_end kill9 0 10 137
expect_end kill9 2 10 137
for i in 0 2; do
  grep -qE 'spmdrun on node1 was killed' "$WORK/kill9.$i" ||
    fail "kill9: node $i's report does not name node1: $(tail -30 "$WORK/kill9.$i")"
done
echo "ok: kill -9 of node 1's spmdrun: nodes 0 and 2 ended with 137 within $((SECONDS - t0)) s, naming node1"
passed=$((passed + 1))

# 2. A whole node dies: no launcher is left to tell anyone.
start_loop nodedies --rdzv-conf peer_timeout=4
mn_kill_ns "$(mn_ns 2)"
t0=$SECONDS
expect_end nodedies 0 10 ""
expect_end nodedies 1 10 ""
for i in 0 1; do
  grep -qE 'rank [45]\b.*(broke|exited|lost)|node 2|node2' "$WORK/nodedies.$i" ||
    fail "nodedies: node $i's report does not name node 2 or its ranks: $(tail -30 "$WORK/nodedies.$i")"
done
echo "ok: node 2 killed whole: nodes 0 and 1 ended within $((SECONDS - t0)) s naming it"
passed=$((passed + 1))

# cut_link NAME WHAT [env...]: the all_reduce loop (with env), node 2's cable cut: spmdrun's
# hang watch (2 s) or a worker (SPMD_TIMEOUT=10) on nodes 0 or 1 names a rank of node 2 and all
# three nodes end. The hang watch's report comes well before the workers' timeouts: with its
# default (half of SPMD_TIMEOUT) it came 2.5 s after the stall plus up to 2.5 s for the ranks'
# records, as the first timeouts fired, and where node 0's leader timed out first (waiting for
# node 1's, which waits for node 2's) its node could end the job before anyone named node 2
# (once in CI, under load).
cut_link() {
  local name=$1 what=$2
  shift 2
  local -x SPMD_TIMEOUT=10
  local assignment
  for assignment in "$@"; do local -x "$assignment"; done
  start_loop "$name" --rdzv-conf peer_timeout=8 --hang-timeout 2
  link_down 2
  t0=$SECONDS
  expect_end "$name" 0 30 ""
  expect_end "$name" 1 30 ""
  for i in 0 1; do
    grep -qE 'FAILED|the job failed' "$WORK/$name.$i" || fail "$name: node $i printed no report: $(tail -30 "$WORK/$name.$i")"
  done
  # Timeouts cascade (a leader waiting for node 1's leader, which waits for node 2's), but the
  # rank that waited on node 2 says so, and its node's report carries it; or, first (its
  # default is half of SPMD_TIMEOUT), spmdrun's hang watch blames node 2's ranks.
  local named
  # (awk reads every line: a reader that stops early would kill grep with SIGPIPE under pipefail)
  named=$(grep -hoE 'spmd (PeerLost|Timeout): .*(from|to|rank) [45]\b|likely cause: ranks? [45]\b' \
    "$WORK/$name.0" "$WORK/$name.1" | awk 'NR == 1 { print substr($0, 1, 120) }')
  [[ -n $named ]] || fail "$name: no worker named a rank of node 2: $(tail -n 30 "$WORK/$name.0" "$WORK/$name.1")"
  expect_end "$name" 2 60 ""
  link_up 2
  echo "ok: node 2's link cut$what: nodes 0 and 1 named its ranks ($named), and all three nodes ended within $((SECONDS - t0)) s"
  passed=$((passed + 1))
}

# 3. A cut cable: nothing breaks, nothing answers.
cut_link linkcut ""
# 4. The cut again, while hier runs pipelined (16 MiB: 8 chunks, the leaders' thread in the
# network while the hosts reduce and broadcast).
cut_link pipelined " during pipelined 16 MiB all_reduces" ALL_REDUCE_LOOP_FLOATS=4194304

# 5. A slow stop on another node than the failure's: node 1's worker ignores SIGTERM, so its
# spmdrun reads the verdict only after the grace period (10 s, beyond the 10 s the store's
# host waited for the acknowledgements before: node 1 then retried a gone store for 30 s and
# reported a lost store, exit 1).
t0=$SECONDS
static_job slowstop 2 1 --grace-period 10 --no-python sh -c \
  'if [ "$RANK" = 0 ]; then sleep 1; echo "rank 0 fails on purpose" >&2; exit 3; fi
   trap "echo rank $RANK ignores SIGTERM" TERM; echo "rank $RANK running"; while :; do sleep 0.2; done'
[[ ${JOB_RC[0]} == 3 && ${JOB_RC[1]} == 3 ]] ||
  fail "slowstop: nodes exited ${JOB_RC[*]}, expected 3 3: $(tail -8 "$WORK/slowstop.1")"
grep -q 'the job failed on another node: rank 0' "$WORK/slowstop.1" ||
  fail "slowstop: node 1 does not name rank 0's failure: $(tail -8 "$WORK/slowstop.1")"
echo "ok: node 1 stopping for its grace period (10 s) still read the verdict: exit 3, rank 0 named, in $((SECONDS - t0)) s"
passed=$((passed + 1))

echo "multinode failures: $passed passed, 0 failed"
