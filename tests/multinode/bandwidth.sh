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
source "$(dirname "$0")/jobs.sh"
bin_dir=$1
shift
sizes=16M,64M iters=5 warm=1
while (($#)); do
  case $1 in
    --smoke) sizes=4M iters=2 warm=0; shift ;;
    -s) sizes=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    *) echo "bandwidth.sh: unknown argument $1"; exit 2 ;;
  esac
done
mn_setup "$bin_dir" 3
export SPMD_TIMEOUT=120
MN_JOB_TIMEOUT=500
rate_mbps=$(tc -n "$(mn_ns 0)" qdisc show dev eth0 | grep -oE 'rate [0-9.]+[GMK]bit' | awk '{
  v = $2; u = substr(v, length(v) - 3, 1); sub(/[GMK]bit/, "", v); print v * (u == "G" ? 1000 : u == "K" ? 0.001 : 1) }')
echo "links: tbf rate ${rate_mbps} Mbit/s each way ($(tc -n "$(mn_ns 0)" qdisc show dev eth0 | head -1)); load $(cut -d' ' -f1-3 /proc/loadavg)"

# bench NAME NPROC COLLECTIVE FACTOR: spmd-bench on 3 nodes; prints its table and each size's
# per-link rate (algbw * FACTOR) against the link's.
bench() {
  local name=$1 nproc=$2 coll=$3 factor=$4
  on_node 0 nstat -n >/dev/null
  static_job "$name" 3 "$nproc" "$BIN/spmd-bench" -c "$coll" -s "$sizes" -n "$iters" -w "$warm" ||
    fail "spmd-bench $coll on 3 nodes x $nproc failed: $(all_output "$name" | tail -30)"
  echo "== $coll, 3 nodes x $nproc rank(s) (node0 retransmitted $(on_node 0 nstat -az TcpRetransSegs | awk '$1 == "TcpRetransSegs" {print $2}') TCP segments):"
  grep -E '^\[0\]:( |#)' "$WORK/$name.0" | sed 's/^\[0\]://'
  all_output "$name" | sed 's/^\[[0-9]*\]://' | awk '/^ *[0-9]/ && $NF != 0 { bad = 1 } END { exit bad }' ||
    fail "wrong results: $(all_output "$name")"
  sed 's/^\[[0-9]*\]://' "$WORK/$name.0" | awk -v rate="$rate_mbps" -v f="$factor" '/^ *[0-9]/ {
      link = $(NF - 2) * f * 8000;  # algbw GB/s -> Mbit/s each link carries
      printf "   %s B: %.0f Mbit/s per link = %.1f%% of the link rate\n", $1, link, 100 * link / rate }'
}
# A ring all_reduce over N = 3 nodes moves 2(N-1)/N = 4/3 of the buffer over each link; the
# send/recv ring (rank r to r+1) one buffer: one TCP stream per link, the baseline.
bench sendrecv 1 sendrecv 1
bench ar1 1 all_reduce 1.3333333
bench ar2 2 all_reduce 1.3333333
# Which algorithm each phase used (one TRACE run of the largest size, 1 iteration).
SPMD_DEBUG=TRACE static_job trace 3 2 "$BIN/spmd-bench" -c all_reduce -s "${sizes##*,}" -n 1 -w 0 >/dev/null ||
  fail "trace run failed: $(all_output trace | tail -20)"
echo "algorithms (3 x 2, ${sizes##*,}, calls per rank over the run): $(all_output trace | grep -oE 'via [a-z_]+' |
  grep -v 'via env' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
echo "multinode bandwidth: 1 passed, 0 failed"
