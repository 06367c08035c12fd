#!/usr/bin/env bash
# 3 emulated nodes × 2 ranks (tests/multinode/cluster.sh), real TCP between namespaces:
#  1. static rendezvous: the collectives worker's check mode, every rank OK, host identities
#     without SPMD_HOST_ID (3 hosts, hierarchical algorithms chosen: SPMD_DEBUG=TRACE);
#  2. spmd-bench across nodes verifies every collective for sizes around the algorithm
#     thresholds and several dtypes/ops (exit 1 on any wrong element);
#  3. c10d rendezvous, same check, with SPMD_SOCKET_IFNAME=eth0;
#  4. train_mlp (DDP): the parameter checksum equals a one-node run of 6 ranks
#     (SPMD_DETERMINISTIC=1: identical bits), and is identical on all 6 ranks;
#  5. a disagreement only hosts can see (each host's ranks broadcast from their own first
#     rank: the ranks of a host agree, the hosts do not) is a Mismatch on every node, well
#     before the deadline, with the job failing.
# Usage: collectives.sh BIN_DIR   (exit 77 = skipped: no namespaces here)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3
export SPMD_TIMEOUT=60
passed=0

# 1. check mode over the static rendezvous; TRACE shows each call's algorithm and the hosts.
SPMD_DEBUG=TRACE static_job check 3 2 "$TESTS_BIN/spmd_collectives_worker" check ||
  fail "check job failed (rc ${JOB_RC[*]}): $(all_output check | grep -v TRACE | tail -30)"
expect_count check 'rank [0-5] ok' 6
output_has check 'via hier' ||
  fail "no hierarchical algorithm was chosen across 3 hosts; chosen: $(all_output check | grep -oE 'via [a-z_]+' |
    sort | uniq -c | tr '\n' ' '); groups: $(all_output check | grep -E 'ranks on' | head -3)"
echo "ok: check mode, static rendezvous, 3 nodes x 2 ranks (algorithms: $(all_output check |
  grep -oE 'via [a-z_]+' | grep -v 'via env' | sort -u | tr '\n' ' '))"
passed=$((passed + 1))

# 2. spmd-bench verifies results before timing them; sizes straddle the hier/ring/binomial limits.
bench_case() {
  local name=$1
  shift
  static_job "$name" 3 2 "$BIN/spmd-bench" -n 1 -w 0 "$@" ||
    fail "spmd-bench $* failed (rc ${JOB_RC[*]}): $(all_output "$name" | tail -30)"
  # Rows are "[rank]:  size count type ... #wrong"; every row must say 0 wrong, and rows there must be.
  all_output "$name" | awk '{ sub(/^\[[0-9]+\]:/, "") } /^ *[0-9]/ { rows++; if ($NF != 0) bad = 1 }
                            END { exit (bad || rows == 0) }' ||
    fail "spmd-bench $*: wrong elements, or no result rows: $(all_output "$name")"
}
all=all_reduce,broadcast,reduce,all_gather,reduce_scatter,all_to_all,all_to_allv,gather,scatter,barrier,sendrecv
bench_case bench_f32 -c "$all" -s 8,4K,100K,3M -r 5
bench_case bench_bf16 -c all_reduce,reduce,reduce_scatter -d bf16 -o avg -s 6,64K,1M
bench_case bench_i64 -c all_reduce,reduce -d i64 -o bxor -s 8,72K -r 3
bench_case bench_f64 -c all_reduce,reduce_scatter -d f64 -o max -s 24,2M
echo "ok: spmd-bench verified ${all//,/ } (f32 sum), bf16 avg, i64 bxor, f64 max across nodes"
passed=$((passed + 1))

# 3. c10d rendezvous, TCP on the interface named by SPMD_SOCKET_IFNAME.
SPMD_SOCKET_IFNAME=eth0 c10d_job c10d 3 2 "$TESTS_BIN/spmd_collectives_worker" check ||
  fail "c10d job failed (rc ${JOB_RC[*]}): $(all_output c10d | tail -30)"
expect_count c10d 'rank [0-5] ok' 6
echo "ok: check mode, c10d rendezvous, SPMD_SOCKET_IFNAME=eth0"
passed=$((passed + 1))

# 4. DDP: the same parameters as on one node.
mlp=(--epochs 2 --samples 2048 --checkpoint '')
SPMD_DETERMINISTIC=1 static_job mlp 3 2 "$BIN/train_mlp" "${mlp[@]}" ||
  fail "train_mlp across nodes failed: $(all_output mlp | tail -30)"
SPMD_DETERMINISTIC=1 timeout -s KILL 120 "$SPMDRUN" --nproc-per-node 6 "$BIN/train_mlp" "${mlp[@]}" >"$WORK/mlp1" 2>&1 ||
  fail "train_mlp on one node failed: $(tail -30 "$WORK/mlp1")"
multi=$(all_output mlp | grep -oE 'parameter checksum [^,]+, identical on all 6 ranks: yes')
single=$(grep -oE 'parameter checksum [^,]+, identical on all 6 ranks: yes' "$WORK/mlp1")
[[ -n $multi && $multi == "$single" ]] ||
  fail "train_mlp: 3 nodes gave '$multi', one node '$single'"
echo "ok: train_mlp 3x2 nodes = 1x6 on one node: ${multi#parameter }"
passed=$((passed + 1))

# 5. Ranks of a host agree, hosts disagree: only the cross-host (TCP, hierarchical) path can
# see it. The ranks are started the torchrun way, without spmdrun (whose teardown would stop
# the other nodes' ranks before they report): every rank must raise Mismatch (exit 3); the
# group deadline (600 s) is far beyond the job's limit, so a Timeout cannot pass for it.
pids=()
for n in 0 1 2; do
  for l in 0 1; do
    r=$((2 * n + l))
    bg_on_node "$n" "$WORK/hosts.$r" env RANK=$r WORLD_SIZE=6 LOCAL_RANK=$l LOCAL_WORLD_SIZE=2 GROUP_RANK=$n \
      MASTER_ADDR="$(node_addr 0)" MASTER_PORT=$((MN_PORT + 1)) SPMD_TIMEOUT=600 \
      timeout -s KILL "$MN_JOB_TIMEOUT" "$TESTS_BIN/spmd_disagree_worker" host-roots
    pids+=("$BG_PID")
  done
done
for r in 0 1 2 3 4 5; do
  wait "${pids[$r]}" && rc=0 || rc=$?
  [[ $rc == 3 ]] && grep -q "rank $r raised Mismatch" "$WORK/hosts.$r" ||
    fail "rank $r (node $((r / 2))) exited $rc, not with a Mismatch: $(tail -20 "$WORK/hosts.$r")"
done
echo "ok: a disagreement between hosts (their ranks agreeing within each) is a Mismatch on all 6 ranks:"
echo "    $(grep -h raised "$WORK/hosts.3" | cut -c1-200)"
passed=$((passed + 1))

echo "multinode collectives: $passed passed, 0 failed"
