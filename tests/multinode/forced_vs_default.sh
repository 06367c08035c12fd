#!/usr/bin/env bash
# One cell of the grid, its forced row against its default row, in jobs that alternate: does an
# algorithm take as long as the default after its trials as when it runs alone (forced)?
# Where they differ, what a group's earlier calls sent changed the connections (multinode.md,
# Limits: with bbr as TCP's congestion control they can).
#
# Usage: forced_vs_default.sh BIN_DIR COLLECTIVE SIZE LAYOUT ALGORITHM SPMD_NET [options]
#   --rate R     link rate (cluster.sh's MN_RATE; default 1gbit; "" = unshaped)
#   --delay D    one-way delay per node (MN_DELAY, e.g. 200us)
#   --cc NAME    SPMD_SOCKET_CONGESTION for spmd's connections (default: the kernel's)
#   -r ROUNDS    pairs of jobs, forced then default (default 3)
#   -n ITERS, -w WARMUP   spmd-bench's timed and untimed calls (default 40 and 289, as the grid below 1 MiB)
# Nodes are pinned to cores (MN_PIN=1), as cost_model.sh --pin. Prints one line per job:
# "forced|default SIZE MEDIAN_US", then the congestion control the nodes used.
# Example (3 x 1 direct all_to_all of 1 MiB at 100 Mbit/s, links as a grid's calibration read):
#   bash tests/multinode/forced_vs_default.sh build/bin all_to_all 1M 3x1 direct \
#     net=12MB@26us,host=2040MB@23us,shm=9938MB@11us,msg=11us --rate 100mbit --cc cubic
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
(($# >= 6)) || { sed -n '2,17p' "$0"; exit 2; }
bin_dir=$1 coll=$2 size=$3 layout=$4 algo=$5 net=$6
shift 6
rate=1gbit rounds=3 iters=40 warmup=289
while (($#)); do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --delay) export MN_DELAY=$2; shift 2 ;;
    --cc) export SPMD_SOCKET_CONGESTION=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -w) warmup=$2; shift 2 ;;
    *) echo "forced_vs_default.sh: unknown argument $1"; exit 2 ;;
  esac
done
[[ $layout =~ ^[0-9]+x[0-9]+$ ]] || { echo "forced_vs_default.sh: LAYOUT is NODESxRANKS, e.g. 3x2 (got $layout)"; exit 2; }
nodes=${layout%x*} nproc=${layout#*x}
export MN_PIN=1 MN_RATE=$rate SPMD_TIMEOUT=120
MN_JOB_TIMEOUT=600
mn_setup "$bin_dir" "$nodes"

job() {
  local name=$1
  shift
  per_node_job "$name" "$nodes" env "$@" SPMD_NET="$net" "$SPMDRUN" --nnodes "$nodes" --node-rank @NODE@ \
    --nproc-per-node "$nproc" --master-addr "$(node_addr 0)" --master-port "$MN_PORT" \
    "$BIN/spmd-bench" -c "$coll" -s "$size" -n "$iters" -w "$warmup" ||
    { all_output "$name" | tail; fail "the $name job failed"; }
  sed 's/^\[[0-9]*\]://' "$WORK/$name.0" | awk -v n="$name" '/^ *[0-9]/ { print n, $1, $6 }'
}
for ((r = 0; r < rounds; ++r)); do
  job forced SPMD_ALGO="$coll=$algo"
  job default SPMD_ALGO=
done
if [[ -n ${SPMD_SOCKET_CONGESTION:-} ]]; then
  echo "congestion control: $SPMD_SOCKET_CONGESTION (SPMD_SOCKET_CONGESTION)"
else
  echo "congestion control: $(ip netns exec "$(mn_ns 0)" sysctl -n net.ipv4.tcp_congestion_control) (the kernel's default)"
fi
