#!/usr/bin/env bash
# Runs spmd-bench and the peers (Gloo, torch.distributed gloo, Open MPI over TCP and over
# shared memory) side by side in one run, repetitions interleaved so that every
# implementation sees the same machine, then prints the markdown comparison table
# (bench/compare_table.py). Every run is under `timeout`; a missing peer is skipped.
#
#   bench/compare.sh [--quick] [--build DIR] [--nprocs "2 4"] [--sizes 8,1K,64K,1M,16M,64M]
#                    [--collectives all_reduce,broadcast,all_gather] [--reps N] [--iters N]
#                    [--warmup N] [--peers gloo,torch-gloo,mpi-tcp,mpi-shm] [--no-spin]
#                    [--out DIR] [--timeout SECONDS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
args="$*"

build=$root/build
nprocs="2 4"
sizes=8,1K,64K,1M,16M,64M
collectives=all_reduce,broadcast,all_gather
reps=3
iters=10
warmup=3
peers=gloo,torch-gloo,mpi-tcp,mpi-shm
spin=1
out=""
limit=300

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'

  --quick        1 repetition, sizes 8,64K,1M,16M, 5 iterations (about a minute)
  --peers LIST   any of gloo, gloo-ring, gloo-hd, torch-gloo, mpi-tcp, mpi-shm
  --no-spin      leave idle CPUs idle. By default two nice-19 busy loops keep the CPUs awake:
                 on this VM a sleeping CPU takes a timer tick (~4 ms) to wake, which hits every
                 implementation that blocks in the kernel (Gloo, torch, spmd) and not those
                 that busy-poll (Open MPI); spinning at the lowest priority removes that
                 artefact and costs the benchmarks ~1.5% of a CPU.
  --out DIR      where raw.log and table.md go (default bench/results/compare-<time>)
EOF
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) reps=1; sizes=8,64K,1M,16M; iters=5; warmup=2; shift ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --nprocs) nprocs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --collectives) collectives=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --no-spin) spin=0; shift ;;
    --out) out=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

out=${out:-$root/bench/results/compare-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
log=$out/raw.log
: > "$log"
python=/usr/bin/python3  # Debian's python has torch; a pyenv python3 earlier on PATH does not
common=(-c "$collectives" -s "$sizes" -n "$iters" -w "$warmup" --csv --no-header)

spinners=()
cleanup() { for p in "${spinners[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if ((spin)); then
  for ((i = 0; i < $(nproc); i++)); do
    nice -n 19 bash -c 'while :; do :; done' &
    spinners+=($!)
  done
fi

# run NAME CMD...: one benchmark run, its CSV rows appended to the log.
run() {
  local name=$1; shift
  echo "  $name: $*" >&2
  if ! timeout -k 10 "$limit" "$@" >> "$log" 2> "$out/last-stderr.txt"; then
    echo "compare.sh: $name failed or timed out (stderr follows)" >&2
    tail -5 "$out/last-stderr.txt" >&2
  fi
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

[[ -x $build/bin/spmd-bench ]] || echo "compare.sh: $build/bin/spmd-bench not built; only the peers run" >&2
start=$(date +%s)
{
  echo "# compare.sh run at $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $(nproc) CPUs," \
       "load $(cut -d' ' -f1-3 /proc/loadavg), spin=$spin"
  echo "# nprocs=$nprocs sizes=$sizes collectives=$collectives reps=$reps iters=$iters warmup=$warmup"
} | tee -a "$log" >&2

for ((rep = 1; rep <= reps; rep++)); do
  for p in $nprocs; do
    echo "rep $rep/$reps, P=$p" >&2
    if [[ -x $build/bin/spmd-bench ]]; then
      # shellcheck disable=SC2046
      run spmd $(spmd_cmd "$p") "${common[@]}"
    fi
    if have gloo && [[ -x $build/bin/gloo-bench ]]; then
      run gloo "$here/peers/spawn.sh" -t "$limit" "$p" "$build/bin/gloo-bench" "${common[@]}"
    fi
    for algo in ring hd; do
      if have "gloo-$algo" && [[ -x $build/bin/gloo-bench ]] && [[ $collectives == *all_reduce* ]]; then
        run "gloo-$algo" "$here/peers/spawn.sh" -t "$limit" "$p" "$build/bin/gloo-bench" --algo "$algo" \
          -c all_reduce -s "$sizes" -n "$iters" -w "$warmup" --csv --no-header
      fi
    done
    if have torch-gloo && "$python" -c 'import torch' 2>/dev/null; then
      run torch-gloo "$python" "$here/peers/torch_bench.py" --nproc "$p" --timeout "$limit" "${common[@]}"
    fi
    if have mpi-tcp && [[ -x $build/bin/mpi-bench ]]; then
      run mpi-tcp "${mpirun_base[@]}" -np "$p" --mca btl self,tcp "$build/bin/mpi-bench" --name mpi-tcp "${common[@]}"
    fi
    if have mpi-shm && [[ -x $build/bin/mpi-bench ]]; then
      run mpi-shm "${mpirun_base[@]}" -np "$p" --mca btl self,vader "$build/bin/mpi-bench" --name mpi-shm "${common[@]}"
    fi
  done
done

echo "# took $(($(date +%s) - start)) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log" >&2
{
  echo "Command: bench/compare.sh $args"
  grep '^# compare.sh\|^# nprocs\|^# took' "$log"
  echo
  python3 "$here/compare_table.py" --peers "$peers" "$log"
} > "$out/table.md"
status=$?
cat "$out/table.md"
echo "(raw rows: $log; table: $out/table.md)" >&2
exit $status
