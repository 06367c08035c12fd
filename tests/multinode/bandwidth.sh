#!/usr/bin/env bash
# all_reduce bandwidth across emulated nodes whose links are shaped to $MN_RATE (default
# 1 Gbit/s each way, tc tbf): spmd-bench on 3 nodes × 1 rank (every byte crosses a link) and
# 3 nodes × 2 ranks (hierarchical: shared memory on a node, TCP between the nodes' leaders).
# Prints spmd-bench's table, the algorithm TRACE names for the inter-node phase, and busbw as a
# fraction of the link rate. Per node, a ring all_reduce of S bytes over N nodes sends and
# receives 2(N-1)/N * S, so busbw (algbw * 2(N-1)/N, N = nodes) is what each link carries.
# Usage: bandwidth.sh BIN_DIR [--smoke] [-s SIZES] [-n ITERS]
#   --smoke: one 4 MiB size, 2 iterations (ctest: the path works and the results are right)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "$1" && pwd)
shift
SPMDRUN=$BIN/spmdrun
source "$here/cluster.sh"
source "$here/jobs.sh"
sizes=16M,64M iters=5 warm=1
while (($#)); do
  case $1 in
    --smoke) sizes=4M iters=2 warm=0; shift ;;
    -s) sizes=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    *) echo "bandwidth.sh: unknown argument $1"; exit 2 ;;
  esac
done
cluster_require || exit 77
WORK=$(mktemp -d)
MN_EXTRA_CLEANUP="rm -rf $WORK"
cluster_up 3 || fail "cannot build the cluster"
export SPMD_TIMEOUT=120
MN_JOB_TIMEOUT=500
rate_mbps=$(tc -n "$(mn_ns 0)" qdisc show dev eth0 | grep -oE 'rate [0-9.]+[GMK]bit' | awk '{
  v = $2; u = substr(v, length(v) - 3, 1); sub(/[GMK]bit/, "", v); print v * (u == "G" ? 1000 : u == "K" ? 0.001 : 1) }')
echo "links: tbf rate ${rate_mbps} Mbit/s each way ($(tc -n "$(mn_ns 0)" qdisc show dev eth0 | head -1)); load $(cut -d' ' -f1-3 /proc/loadavg)"

for nproc in 1 2; do
  name=bw$nproc
  static_job "$name" 3 "$nproc" "$BIN/spmd-bench" -c all_reduce -s "$sizes" -n "$iters" -w "$warm" ||
    fail "spmd-bench on 3 nodes x $nproc failed: $(all_output "$name" | tail -30)"
  echo "== 3 nodes x $nproc rank(s):"
  cat "$WORK/$name.0"
  all_output "$name" | awk '/^ *[0-9]/ && $NF != 0 { bad = 1 } END { exit bad }' || fail "wrong results: $(all_output "$name")"
  # size(B) count type op root time(us) algbw(GB/s) busbw(GB/s) #wrong: per-link busbw over N = 3 nodes.
  awk -v rate="$rate_mbps" '/^ *[0-9]/ {
      algbw = $(NF - 2); link = algbw * 2 * 2 / 3 * 8000;  # GB/s -> Mbit/s, ring factor 2(N-1)/N, N = 3
      printf "   %s B: algbw %.4f GB/s, per-link busbw %.0f Mbit/s = %.1f%% of the link rate\n", $1, algbw, link, 100 * link / rate }' "$WORK/$name.0"
done
# Which algorithm each phase used (one TRACE run of the largest size, 1 iteration).
SPMD_DEBUG=TRACE static_job trace 3 2 "$BIN/spmd-bench" -c all_reduce -s "${sizes##*,}" -n 1 -w 0 >/dev/null ||
  fail "trace run failed: $(all_output trace | tail -20)"
echo "algorithms (3 x 2, ${sizes##*,}): $(all_output trace | grep -oE 'via [a-z_]+|hier[a-z_ ]*(ring|recursive|doubling)[a-z_ ]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
echo "multinode bandwidth: 1 passed, 0 failed"
