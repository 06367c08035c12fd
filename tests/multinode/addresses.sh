#!/usr/bin/env bash
# Addresses on hosts as people have them: three nodes that share one host name, mapped to
# 127.0.1.1 in their /etc/hosts (Debian's installer writes that; containers from one image
# share a name). Resolving the host name gives loopback, so a node that advertised its name, or
# workers that listened on the address routing to it, would be unreachable. spmdrun learns
# each node's address from its rendezvous connection instead (SPMD_LOCAL_ADDR, MASTER_ADDR):
#  1. c10d rendezvous at node 0's address: the collectives check over 3 nodes x 2 ranks;
#  2. static rendezvous: the same;
#  3. every worker's SPMD_LOCAL_ADDR is its node's own address and MASTER_ADDR node 0's (c10d);
#     --local-addr wins over what is learned;
#  4. the etcd rendezvous (one member on node 0): the check again;
#  5. for the record, torchrun with gloo on the same nodes (torch 1.13, when it is installed):
#     its outcome is printed, not judged.
# Usage: addresses.sh BIN_DIR   (exit 77 = skipped: no namespaces here)
set -uo pipefail
export MN_SHARED_HOSTNAME=trainer
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3
export SPMD_TIMEOUT=30
passed=0
[[ $(on_node 1 hostname) == trainer ]] || fail "node 1 is not called 'trainer'"
resolved=$(on_node 1 getent hosts trainer | cut -d' ' -f1)
[[ $resolved == 127.0.1.1 ]] || fail "'trainer' resolves to '$resolved' on node 1, not 127.0.1.1"

# 1. c10d, the endpoint given as node 0's address (as a user must: its name is everyone's).
c10d_job c10d 3 2 "$TESTS_BIN/spmd_collectives_worker" check || fail "c10d: $(all_output c10d | tail -20)"
expect_count c10d 'rank [0-5] ok' 6
echo "ok: c10d rendezvous, 3 nodes named 'trainer' (127.0.1.1): the collectives check passed"
passed=$((passed + 1))

# 2. static, --master-addr node 0's address.
static_job static 3 2 "$TESTS_BIN/spmd_collectives_worker" check || fail "static: $(all_output static | tail -20)"
expect_count static 'rank [0-5] ok' 6
echo "ok: static rendezvous, the same nodes: the collectives check passed"
passed=$((passed + 1))

# 3. What the workers were told.
c10d_job env 3 1 "$TESTS_BIN/print_env" || fail "print_env job: $(all_output env | tail -20)"
for i in 0 1 2; do
  grep -q "SPMD_LOCAL_ADDR=$(node_addr "$i")$" "$WORK/env.$i" ||
    fail "node $i's worker was not told its address $(node_addr "$i"): $(grep -E 'LOCAL_ADDR|MASTER_ADDR' "$WORK/env.$i")"
done
masters=$(grep -h '^\[.*\]:MASTER_ADDR=\|^MASTER_ADDR=' "$WORK"/env.* | sed 's/.*MASTER_ADDR=//' | sort -u)
[[ $masters == "$(node_addr 0)" || $masters =~ ^10\.77\.0\.[123]$ ]] ||
  fail "MASTER_ADDR is not one node's address: '$masters'"
on_node 1 timeout -s KILL 60 "$SPMDRUN" --nproc-per-node 1 --local-addr 10.77.0.99 "$TESTS_BIN/print_env" >"$WORK/given.out" 2>&1 ||
  fail "--local-addr: $(tail "$WORK/given.out")"
grep -q "SPMD_LOCAL_ADDR=10.77.0.99$" "$WORK/given.out" || fail "--local-addr was not passed on: $(grep LOCAL_ADDR "$WORK/given.out")"
echo "ok: each worker's SPMD_LOCAL_ADDR is its node's address, MASTER_ADDR=$masters (a node's, not 'trainer'); --local-addr wins"
passed=$((passed + 1))

# 4. etcd (one member on node 0).
if command -v etcd >/dev/null; then
  a0=$(node_addr 0)
  bg_on_node 0 "$WORK/etcd.log" etcd --data-dir "$WORK/etcd-data" --listen-client-urls "http://$a0:2379" \
    --advertise-client-urls "http://$a0:2379" --listen-peer-urls "http://127.0.0.1:2380"
  etcd_up() { on_node 1 env ETCDCTL_API=3 etcdctl --endpoints "$a0:2379" endpoint health >/dev/null 2>&1; }
  wait_until 30 etcd_up || fail "etcd did not start: $(tail -n 5 "$WORK/etcd.log")"
  per_node_job etcd 3 "$SPMDRUN" --nnodes 3 --nproc-per-node 2 --rdzv-backend etcd --rdzv-endpoint "$a0:2379" \
    --rdzv-id addresses "$TESTS_BIN/spmd_collectives_worker" check || fail "etcd: $(all_output etcd | tail -20)"
  expect_count etcd 'rank [0-5] ok' 6
  echo "ok: etcd rendezvous, the same nodes: the collectives check passed"
  passed=$((passed + 1))
fi

# 5. torchrun + gloo there, for the record (Debian's torch 1.13).
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
  cat >"$WORK/gloo.py" <<'PY'
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(4)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} all_reduce {t[0].item():.0f}", flush=True)
PY
  MN_JOB_TIMEOUT=60 per_node_job torchrun 3 /usr/bin/python3 -m torch.distributed.run --nnodes 3 --nproc_per_node 2 \
    --rdzv_backend c10d --rdzv_endpoint "$(node_addr 0):29400" --rdzv_id rec "$WORK/gloo.py"
  rc=$?
  ok=$(cat "$WORK"/torchrun.* | grep -c 'all_reduce 6' || true)
  why=$(grep -hoE '(Connection refused|Connection reset|timed out|Timeout|RuntimeError)[^"]{0,120}' "$WORK"/torchrun.* | head -1)
  outcome="exit $rc"
  ((rc == 137)) && outcome="no end within 60 s (killed)"
  echo "record: torchrun + gloo on the same nodes (torch 1.13): $outcome, $ok of 6 ranks reduced${why:+; first error: $why}"
fi

echo "multinode addresses: $passed passed, 0 failed"
