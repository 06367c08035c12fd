#!/usr/bin/env bash
# The c10d rendezvous at scale: N spmdrun processes ("nodes", one worker each) on this
# machine meet at one store, run one round and end. They all run in one network namespace of
# their own, so the kernel's TCP counters there (nstat) count exactly the store's traffic:
# connections accepted, segments in, bytes. The store host's peak memory (VmHWM of the
# spmdrun that bound the endpoint) and the number of open connections are sampled while the
# job runs. Prints one line per N, e.g.
#   nodes 256: 14.2 s, store: 768 connections (peak 512 open), 81234 segments in, peak RSS 9.1 MiB
# Usage: rendezvous_scale.sh BIN_DIR N [N...] [--worker true|spmd] [--hold SECONDS] [--straggle SECONDS]
#                            [--backend c10d|etcd]
#   --worker spmd: spmd_elastic_worker (in the build's tests/bin/: jobs.sh's TESTS_BIN),
#     i.e. spmd::init + an all_reduce over all N ranks;
#   --hold S: workers sleep S seconds, so the launchers' heartbeats run for that long.
#   --straggle S: the last node starts S seconds after the others, which wait for it meanwhile
#     (what waiting costs the store: the difference from a run without it, over S);
#   --backend etcd: the etcd rendezvous, with one etcd member in the namespace (127.0.0.1:2379);
#     the "store" figures are then etcd's (its connections, its peak RSS).
#   (ctest runs it with 24; docs/multinode.md has the 256-node figures and the command)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
bin_dir=$1
shift
worker=(--no-python true)
spmd_worker=0
backend=c10d
straggle=0
sizes=()
while (($#)); do
  case $1 in
    --worker) [[ $2 == spmd ]] && spmd_worker=1; shift 2 ;;
    --hold) worker=(--no-python sleep "$2"); spmd_worker=0; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --straggle) straggle=$2; shift 2 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[[ $backend == c10d || $backend == etcd ]] || fail "--backend $backend: c10d or etcd"
if [[ $backend == etcd ]]; then mn_setup "$bin_dir" 0 nstat etcd; else mn_setup "$bin_dir" 0 nstat; fi
((spmd_worker)) && worker=("$TESTS_BIN/spmd_elastic_worker")
MN_RATE="" cluster_up 1 || fail "cannot make the namespace"
ulimit -n 65536 2>/dev/null || true
PORT=29400
if [[ $backend == etcd ]]; then
  PORT=2379
  bg_on_node 0 "$WORK/etcd.log" etcd --data-dir "$WORK/etcd-data" --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380
  etcd_up() { on_node 0 env ETCDCTL_API=3 etcdctl --endpoints 127.0.0.1:2379 endpoint health >/dev/null 2>&1; }
  wait_until 30 etcd_up || fail "etcd did not start: $(tail -n 5 "$WORK/etcd.log")"
fi

# The pid of the process listening on $PORT in node 0's namespace ("" until someone binds it).
store_pid() { on_node 0 ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -oE 'pid=[0-9]+' | head -1 | cut -d= -f2; }

for n in "${sizes[@]}"; do
  on_node 0 nstat -n >/dev/null  # reset the namespace's counters (nstat keeps its history per user)
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date +%s.%N)
  pids=()
  for ((i = 0; i < n; ++i)); do
    ((i == n - 1)) && [[ $straggle != 0 ]] && sleep "$straggle"
    bg_on_node 0 "$WORK/node.$i" timeout -s KILL 600 "$SPMDRUN" --nnodes "$n" --nproc-per-node 1 --rdzv-backend "$backend" \
      --rdzv-endpoint "127.0.0.1:$PORT" --rdzv-id "scale$n" --rdzv-conf join_timeout=500 "${worker[@]}"
    pids+=("$BG_PID")
  done
  # Sample the store host while the job runs: its peak RSS and the open connections.
  peak_kb=0 peak_conns=0 spid=""
  while :; do
    [[ -z $spid ]] && spid=$(store_pid)
    if [[ -n $spid ]]; then
      kb=$(awk '/VmHWM/ {print $2}' "/proc/$spid/status" 2>/dev/null || echo 0)
      ((kb > peak_kb)) && peak_kb=$kb
      conns=$(on_node 0 ss -Htn state established "sport = :$PORT" 2>/dev/null | wc -l)
      ((conns > peak_conns)) && peak_conns=$conns
    fi
    running=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && { running=1; break; }; done
    ((running)) || break
    sleep 0.2
  done
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  t1=$(date +%s.%N)
  ((failed == 0)) || fail "nodes $n: $failed launcher(s) failed: $(grep -l . "$WORK"/node.* | head -3 | xargs tail -n 5)"
  counters=$(on_node 0 nstat -az TcpPassiveOpens TcpInSegs IpExtInOctets 2>/dev/null)
  accepted=$(awk '$1 == "TcpPassiveOpens" {print $2}' <<<"$counters")
  segs=$(awk '$1 == "TcpInSegs" {print $2}' <<<"$counters")
  octets=$(awk '$1 == "IpExtInOctets" {print $2}' <<<"$counters")
  awk -v n="$n" -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" -v acc="$accepted" -v peak="$peak_conns" \
    -v segs="$segs" -v oct="$octets" -v kb="$peak_kb" -v l0="$load_before" -v l1="$(cut -d' ' -f1 /proc/loadavg)" \
    -v b="$backend" 'BEGIN { printf "%s, nodes %d: %.1f s, store: %d connections (peak %d open), %d segments in, %.1f MB in, peak RSS %.1f MiB, load %s -> %s\n",
             b, n, t, acc, peak, segs, oct / 1e6, kb / 1024, l0, l1 }'
  rm -f "$WORK"/node.*
done
echo "multinode rendezvous scale: ${#sizes[@]} passed, 0 failed"
