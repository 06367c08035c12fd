#!/usr/bin/env bash
# The mpi backend's overhead over Open MPI's own collectives: spmd-bench with SPMD_BACKEND=mpi
# and mpi-bench (MPI_Allreduce / MPI_Bcast / MPI_Allgather called directly), under the same
# mpirun settings, repetitions interleaved, then the table of overhead = spmd time / MPI time
# - 1 per collective, P and size, with the goals (<= 5 % at 8 B, <= 2 % from 64 KiB) checked
# (bench/mpi/overhead_table.py). Run it on an idle machine; every run is under `timeout`.
#
#   bench/mpi/overhead.sh [--build DIR] [--nprocs "2 4"] [--sizes 8,1K,64K,1M,16M]
#                         [--collectives all_reduce,broadcast,all_gather] [--reps N] [--iters N]
#                         [--btl self,vader] [--rt] [--out DIR]
#
# --rt runs both under SCHED_FIFO (chrt -f 10, root only): on a machine others are using it
# keeps their processes off the benchmark's cores for the few seconds a run takes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
args="$*"
build=$root/build nprocs="2 4" sizes=8,1K,64K,1M,16M collectives=all_reduce,broadcast,all_gather
reps=5 iters=200 btl=self,vader rt=0 out="" limit=300

while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --nprocs) nprocs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --collectives) collectives=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --btl) btl=$2; shift 2 ;;
    --rt) rt=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "overhead.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for exe in bin/spmd-bench bench/bin/mpi-bench; do
  [[ -x $build/$exe ]] || { echo "overhead.sh: $build/$exe is not built" >&2; exit 2; }
done
[[ -e $build/lib/libspmd_mpi.so ]] || { echo "overhead.sh: the mpi backend's module is not built" >&2; exit 2; }

out=${out:-$root/bench/results/mpi-overhead-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
log=$out/raw.log
: > "$log"
prefix=()
((rt)) && prefix=(chrt -f 10)
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl "$btl" --mca oob_tcp_if_include lo)
echo "# overhead.sh run at $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $(nproc) CPUs, load" \
     "$(cut -d' ' -f1-3 /proc/loadavg), btl=$btl rt=$rt reps=$reps iters=$iters" | tee -a "$log" >&2

run() {  # run NAME CMD...: CSV rows appended to the log
  local name=$1; shift
  setsid timeout -k 10 "$limit" "${prefix[@]}" "$@" >> "$log" 2> "$out/$name.stderr" &
  local sid=$! rc=0
  wait "$sid" || rc=$?
  pkill -KILL -s "$sid" 2>/dev/null
  ((rc == 0)) || { echo "overhead.sh: $name failed (status $rc)" >&2; tail -3 "$out/$name.stderr" >&2; }
}

common=(-c "$collectives" -s "$sizes" -n "$iters" -w 20 --csv --no-header)
for ((rep = 1; rep <= reps; rep++)); do
  for p in $nprocs; do
    echo "rep $rep/$reps, P=$p" >&2
    run mpi "${mpirun[@]}" -np "$p" "$build/bench/bin/mpi-bench" "${common[@]}" --name mpi
    run spmd-mpi env SPMD_BACKEND=mpi "${mpirun[@]}" -x SPMD_BACKEND -np "$p" "$build/bin/spmd-bench" "${common[@]}" \
      --name spmd-mpi
  done
done
{
  echo "Command: bench/mpi/overhead.sh $args"
  grep '^# overhead.sh' "$log"
  echo
  python3 "$here/overhead_table.py" "$log"
} > "$out/table.md"
status=$?
cat "$out/table.md"
echo "(raw rows: $log; table: $out/table.md)" >&2
exit $status
