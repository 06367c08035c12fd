#!/usr/bin/env bash
# Runs spmd-bench and the peers (Gloo, torch.distributed gloo, Open MPI over TCP, over its
# default shared memory and tuned) and copy-bench (the memory bound) side by side in one run,
# repetitions interleaved so that every implementation sees the same machine, then prints the
# markdown comparison table (bench/compare_table.py) and draws busbw against size
# (bench/plot.py). Every run is under `timeout`; a missing peer is skipped.
#
#   bench/compare.sh [--quick | --smoke] [--build DIR] [--nprocs "2 4"]
#                    [--sizes 8,1K,64K,1M,16M,64M] [--reps N] [--iters N] [--warmup N]
#                    [--collectives all_reduce,broadcast,all_gather,reduce_scatter]
#                    [--tiny-iters N] [--big-iters N] [--peers gloo,torch-gloo,mpi-tcp,mpi-shm,mpi-tuned,memcpy]
#                    [--mpi-tuned "MCA ARGS"] [--spin auto|on|off] [--out DIR]
#                    [--timeout SECONDS] [--no-plot] [--steady [--steady-limit US]]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
args="$*"

build=$root/build
nprocs="2 4"
sizes=8,1K,64K,1M,16M,64M
collectives=all_reduce,broadcast,all_gather,reduce_scatter
reps=3
iters=10
warmup=3
tiny_iters=200
big_iters=4
big_warmup=5
# Every run warms up at least this long: spmd's group times its shared-memory algorithms on its
# first 60 calls of each size from 16 KiB a rank and keeps the fastest (docs/collectives.md,
# trials on one host); a shorter warm-up would time those trials, not what the loop runs.
least_warmup=61
peers=gloo,torch-gloo,mpi-tcp,mpi-shm,mpi-tuned,memcpy
spin=auto
out=""
limit=300
plot=1
steady=0           # --steady: run each block only in the VM's fast mood (see --help)
steady_limit=150   # µs: the probe's threshold between the fast and the slow mood
steady_retries=3   # blocks run again at most this often when the mood turned during them
steady_wait=300    # s to wait for the fast mood before running a block anyway
# Open MPI tuned for one host (see --help): no CMA, larger eager and fragment sizes.
mpi_tuned="--mca btl_vader_single_copy_mechanism none --mca btl_vader_eager_limit 32768"
mpi_tuned+=" --mca btl_vader_rndv_eager_limit 65536 --mca btl_vader_max_send_size 65536"

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  local tuned_lines=${mpi_tuned// --mca/$'\n'                              --mca}
  cat <<EOF

  defaults: 3 repetitions, 10 timed + 3 warmup iterations (200 + 20 below 64 KiB: --tiny-iters;
            4 + 5 from 16 MiB: --big-iters); every warm-up at least 61 calls (spmd's trials
            of its shared-memory algorithms take 60; --smoke: none)
  --quick        1 repetition, sizes 8,64K,1M,16M, 5 iterations (about a minute)
  --smoke        P=2, one size (64K), 1 repetition of 1 iteration per peer, no spinners:
                 proves that every peer, column and the plot work (not a measurement)
  --peers LIST   any of gloo, gloo-ring, gloo-hd, torch-gloo, mpi-tcp, mpi-shm, mpi-tuned,
                 memcpy, and spmd-tcp (spmd itself with SPMD_SHM=0 SPMD_LOCAL_SOCKETS=0
                 SPMD_CMA=0: TCP 127.0.0.1 only)
                   mpi-tcp    Open MPI over TCP on loopback (--mca btl self,tcp)
                   mpi-shm    Open MPI's default shared memory (--mca btl self,vader): CMA
                              (process_vm_readv) single copies for large messages, 4 KiB eager
                              limit, 32 KiB fragments
                   mpi-tuned  Open MPI's shared memory tuned for one host: --mca btl self,vader
                              $tuned_lines
                              i.e. no CMA (every message copied into and out of the shared
                              segment, in fragments small enough to stay in cache), messages up
                              to 32 KiB sent eagerly (default 4 KiB), a 64 KiB first fragment and
                              64 KiB pipeline fragments (default 32 KiB)
                   memcpy     copy-bench: P processes memcpy the message size at once; the
                              table's memory bound and spmd's share of it come from it
  --mpi-tuned "ARGS"  replaces mpi-tuned's MCA settings above
  --spin MODE    auto (default), on or off (--no-spin = off). On this VM an idle CPU takes
                 a timer tick (~4 ms) to wake up, which hits implementations that sleep in
                 the kernel while they wait (Gloo, torch): "on" keeps the CPUs awake with one
                 nice-19 busy loop per CPU. But Open MPI, oversubscribed, polls with
                 sched_yield() and then yields its CPU to the spinner for a whole time slice
                 (again ~4 ms), and so does spmd's shared memory (it spins, then yields).
                 "auto" gives each its better condition: spinners for Gloo, torch and
                 spmd-tcp, none for spmd and Open MPI.
  --out DIR      where raw.log, table.md and busbw.png go (default bench/results/compare-<time>)
  --no-plot      no busbw.png (it needs /usr/bin/python3 with matplotlib)
  --steady       this VM has moods lasting minutes in which data movement between its CPUs is
                 3-5x slower for every implementation; a 10-minute run straddles them and its
                 medians mix the two. With --steady every block (one repetition at one P: every
                 peer, one after another) is bracketed by a probe — spmd-bench's 1 MiB
                 all_reduce at P=2, 200 calls: ~60-95 µs in the fast mood, 300-650 µs in the
                 slow — waits (up to ${steady_wait} s, probing every 20 s) for the probe to be
                 at most --steady-limit µs (default ${steady_limit}) before the block, and runs the
                 block again (up to ${steady_retries} times) when the probe after it was slow. Discarded
                 blocks go to discarded.log; raw.log records every probe as a comment line.
EOF
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) reps=1; sizes=8,64K,1M,16M; iters=5; warmup=2; tiny_iters=50; big_iters=3; big_warmup=1; shift ;;
    --smoke) reps=1; nprocs=2; sizes=64K; iters=1; warmup=0; tiny_iters=1; big_iters=1; big_warmup=0; least_warmup=0; spin=off; shift ;;
    --mpi-tuned) mpi_tuned=$2; shift 2 ;;
    --no-plot) plot=0; shift ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --nprocs) nprocs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --collectives) collectives=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --big-iters) big_iters=$2; shift 2 ;;
    --tiny-iters) tiny_iters=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --spin) spin=$2; shift 2 ;;
    --no-spin) spin=off; shift ;;
    --out) out=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --steady) steady=1; shift ;;
    --steady-limit) steady_limit=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

out=${out:-$root/bench/results/compare-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
log=$out/raw.log
: > "$log"
block_log=$out/block.tmp  # one block's rows, appended to raw.log once the block is kept
python=/usr/bin/python3  # Debian's python has torch; a pyenv python3 earlier on PATH does not

[[ $spin == auto || $spin == on || $spin == off ]] || { echo "compare.sh: --spin auto|on|off" >&2; exit 2; }
spinners=()
spin_stop() {
  local p  # the caller's loop variable p (process count) must survive
  for p in "${spinners[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  spinners=()
}
# spin_for KIND: KIND "blocking" (Gloo, torch, spmd-tcp) or "polling" (spmd, Open MPI).
spin_for() {
  local want=0
  [[ $spin == on || ($spin == auto && $1 == blocking) ]] && want=1
  if ((want && ${#spinners[@]} == 0)); then
    for ((i = 0; i < $(nproc); i++)); do
      nice -n 19 bash -c 'while :; do :; done' &
      spinners+=($!)
    done
  elif ((!want)); then
    spin_stop
  fi
}
trap 'spin_stop; rm -f "$block_log" "$out/probe.tmp"' EXIT
trap 'exit 130' INT TERM

failed_runs=()
# run NAME CMD...: one benchmark run, its CSV rows appended to the log.
run() {
  local name=$1; shift
  echo "  $name: $*" >&2
  # Each run in a session of its own, so that whatever it leaves behind (an mpirun that
  # crashed leaves its ranks polling forever) can be found by session id and stopped.
  setsid timeout -k 10 "$limit" "$@" >> "$block_log" 2>> "$out/$name.stderr" &
  local sid=$! rc=0
  wait "$sid" || rc=$?
  pkill -KILL -s "$sid" 2>/dev/null
  if ((rc != 0)); then
    echo "compare.sh: $name failed (status $rc; 124 = timed out); its stderr ends with:" >&2
    tail -5 "$out/$name.stderr" >&2
    failed_runs+=("$name")
  fi
  return 0
}

have() { [[ ",$peers," == *",$1,"* ]]; }
mpirun_base=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca oob_tcp_if_include lo)

spmd_cmd() {
  local p=$1
  if [[ -x $build/bin/spmdrun ]]; then
    echo "$build/bin/spmdrun --nproc-per-node $p $build/bin/spmd-bench"
  else  # before the launcher exists: ranks rendezvous at MASTER_ADDR:MASTER_PORT
    echo "$here/peers/spawn.sh -t $limit $p $build/bin/spmd-bench"
  fi
}

if [[ ! -x $build/bin/spmd-bench ]]; then
  ((steady)) && { echo "compare.sh: --steady probes with $build/bin/spmd-bench, which is not built" >&2; exit 2; }
  echo "compare.sh: $build/bin/spmd-bench not built; only the peers run" >&2
fi
start=$(date +%s)
{
  echo "# compare.sh run at $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $(nproc) CPUs," \
       "load $(cut -d' ' -f1-3 /proc/loadavg), spin=$spin"
  echo "# nprocs=$nprocs sizes=$sizes collectives=$collectives reps=$reps iters=$iters warmup=$warmup" \
       "tiny_iters=$tiny_iters big_iters=$big_iters big_warmup=$big_warmup least_warmup=$least_warmup"
  have mpi-tuned && echo "# mpi-tuned: --mca btl self,vader $mpi_tuned"
} | tee -a "$log" >&2

# Sizes from 16 MiB on run with fewer iterations (--big-iters): at P=4 one 64 MiB all_reduce
# takes 0.1-0.3 s here, and their medians are stable anyway once warm: 5 warm-up calls, as
# nccl-tests makes (the first calls on fresh buffers are slow for everyone — first touches of
# the memory, and spmd collapses buffers it sees again into huge pages —: spmd's reduce_scatter
# 64 MiB at P=2, 4 timed calls after 0/1/2/3/5 warm-ups: 8.9/8.1/6.5/6.8/6.0 ms; 10 after 3,
# 30 and 100: 7.5, 5.8 and 6.0 ms). Sizes below 64 KiB run
# with more (--tiny-iters, a tenth of them warm-up): ten calls of a microsecond are over before
# the scheduler has spread freshly started ranks over the cores, and would time that instead.
read -r tiny small big < <(python3 - "$sizes" <<'PY'
import sys
mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
def parse(t):
    t = t.strip().upper().removesuffix("B").removesuffix("I")
    s = t[-1] if t and t[-1] in "KMG" else ""
    return int(float(t[: len(t) - len(s)]) * mult[s])
items = [x for x in sys.argv[1].split(",") if x]
tiny = [x for x in items if parse(x) < 64 << 10]
small = [x for x in items if 64 << 10 <= parse(x) < 16 << 20]
big = [x for x in items if parse(x) >= 16 << 20]
print(",".join(tiny) or "-", ",".join(small) or "-", ",".join(big) or "-")
PY
)

# at_least N: N warm-up calls, or least_warmup if that is more.
at_least() { echo $(( $1 > least_warmup ? $1 : least_warmup )); }

# each_group NAME CMD...: runs CMD with the tiny sizes, the small ones, then the big ones.
each_group() {
  local name=$1; shift
  [[ $tiny != - ]] && run "$name" "$@" -c "$collectives" -s "$tiny" -n "$tiny_iters" -w "$(at_least $(( (tiny_iters + 9) / 10 )))" --csv --no-header
  [[ $small != - ]] && run "$name" "$@" -c "$collectives" -s "$small" -n "$iters" -w "$(at_least "$warmup")" --csv --no-header
  [[ $big != - ]] && run "$name" "$@" -c "$collectives" -s "$big" -n "$big_iters" -w "$(at_least "$big_warmup")" --csv --no-header
  return 0
}

# probe: the median µs of spmd's 1 MiB all_reduce at P=2 (the machine's mood; empty if it
# failed). In a session of its own, like run(), so a hung probe leaves nothing spinning.
probe() {
  local rows=$out/probe.tmp sid
  # shellcheck disable=SC2046
  # Pinned to shm_rs_ag: the threshold (--steady-limit) was measured with it, and the default
  # selection may move (single copy took 1 MiB at P=2 on 2026-11-26: ~70 µs in the fast mood).
  SPMD_ALGO=all_reduce=shm_rs_ag setsid timeout -k 10 60 $(spmd_cmd 2) -c all_reduce -s 1M -n 200 -w 20 --csv --no-header > "$rows" 2>/dev/null &
  sid=$!
  wait "$sid"
  pkill -KILL -s "$sid" 2>/dev/null
  awk -F, '/spmd,all_reduce,2,1048576,/ { print $9; exit }' "$rows"
  rm -f "$rows"
}
# fast WHEN: probes, notes the result in raw.log, and succeeds when the machine is fast — or
# when the probe failed (the mood is then unknown: the block runs once, as without --steady).
fast() {
  local t
  t=$(probe)
  echo "# probe $1 (rep $rep, P=$p): spmd all_reduce 1 MiB P=2 ${t:-failed (mood unknown)} us" | tee -a "$log" >&2
  [[ -z $t ]] || awk -v t="$t" -v l="$steady_limit" 'BEGIN { exit !(t <= l) }'
}
wait_fast() {
  local waited=0
  until fast before; do
    if ((waited >= steady_wait)); then
      echo "# still slow after ${steady_wait} s: running the block anyway" | tee -a "$log" >&2
      return
    fi
    sleep 20
    waited=$((waited + 20))
  done
}

for ((rep = 1; rep <= reps; rep++)); do
  for p in $nprocs; do
   for ((attempt = 0; ; attempt++)); do
    ((steady)) && { spin_stop; wait_fast; }
    : > "$block_log"
    echo "rep $rep/$reps, P=$p" >&2
    # spmd's shared-memory waits spin, then yield (like Open MPI's): no spinners for it.
    spin_for polling
    # shellcheck disable=SC2046
    [[ -x $build/bin/spmd-bench ]] && each_group spmd $(spmd_cmd "$p")
    spin_for blocking
    if have spmd-tcp && [[ -x $build/bin/spmd-bench ]]; then
      # spmd forced onto TCP 127.0.0.1 (no shared memory, Unix sockets or remote reads): it
      # waits in poll(), as Gloo does
      # shellcheck disable=SC2046
      each_group spmd-tcp env SPMD_SHM=0 SPMD_LOCAL_SOCKETS=0 SPMD_CMA=0 $(spmd_cmd "$p") --name spmd-tcp
    fi
    if have gloo && [[ -x $build/bench/bin/gloo-bench ]]; then
      each_group gloo "$here/peers/spawn.sh" -t "$limit" "$p" "$build/bench/bin/gloo-bench"
    fi
    for algo in ring hd; do
      if have "gloo-$algo" && [[ -x $build/bench/bin/gloo-bench ]] && [[ $collectives == *all_reduce* ]]; then
        collectives=all_reduce each_group "gloo-$algo" "$here/peers/spawn.sh" -t "$limit" "$p" \
          "$build/bench/bin/gloo-bench" --algo "$algo"
      fi
    done
    if have torch-gloo && "$python" -c 'import torch' 2>/dev/null; then
      each_group torch-gloo "$python" "$here/peers/torch_bench.py" --nproc "$p" --timeout "$limit"
    fi
    spin_for polling
    if have mpi-tcp && [[ -x $build/bench/bin/mpi-bench ]]; then
      each_group mpi-tcp "${mpirun_base[@]}" -np "$p" --mca btl self,tcp "$build/bench/bin/mpi-bench" --name mpi-tcp
    fi
    if have mpi-shm && [[ -x $build/bench/bin/mpi-bench ]]; then
      each_group mpi-shm "${mpirun_base[@]}" -np "$p" --mca btl self,vader "$build/bench/bin/mpi-bench" --name mpi-shm
    fi
    if have mpi-tuned && [[ -x $build/bench/bin/mpi-bench ]]; then
      # shellcheck disable=SC2086  # the MCA settings are words
      each_group mpi-tuned "${mpirun_base[@]}" -np "$p" --mca btl self,vader $mpi_tuned "$build/bench/bin/mpi-bench" \
        --name mpi-tuned
    fi
    if have memcpy && [[ -x $build/bench/bin/copy-bench ]]; then  # the memory bound, in the same conditions
      run memcpy "$build/bench/bin/copy-bench" -p "$p" -s "$sizes" -n "$iters" -w "$warmup" --csv --no-header
    fi
    if ((steady)) && ((attempt < steady_retries)) && ! { spin_stop; fast after; }; then
      echo "# block rep $rep P=$p discarded: the machine turned slow during it (discarded.log)" | tee -a "$log" >&2
      cat "$block_log" >> "$out/discarded.log"
      continue
    fi
    cat "$block_log" >> "$log"
    break
   done
  done
done
rm -f "$block_log"

echo "# took $(($(date +%s) - start)) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log" >&2
{
  echo "Command: bench/compare.sh $args"
  grep '^# compare.sh\|^# nprocs\|^# mpi-tuned\|^# took' "$log"
  echo
  python3 "$here/compare_table.py" --spread --peers "$peers" "$log"
} > "$out/table.md"
status=$?
cat "$out/table.md"
if ((plot)); then
  if "$python" -c 'import matplotlib' 2>/dev/null; then
    "$python" "$here/plot.py" "$log" -o "$out/busbw.png" >&2 || status=1
  else
    echo "compare.sh: no plot ($python has no matplotlib: scripts/install-deps.sh installs python3-matplotlib)" >&2
  fi
fi
echo "(raw rows: $log; table: $out/table.md$( ((plot)) && [[ -s $out/busbw.png ]] && echo "; plot: $out/busbw.png"))" >&2
if ((${#failed_runs[@]} > 0)); then
  echo "compare.sh: ${#failed_runs[@]} run(s) failed: ${failed_runs[*]} (their stderr is in $out/<name>.stderr)" >&2
  status=1
fi
exit $status
