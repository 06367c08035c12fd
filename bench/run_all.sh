#!/usr/bin/env bash
# `make bench`: spmd-bench's table for every collective (P=4), then the side-by-side
# comparison with Gloo, torch.distributed and Open MPI (bench/compare.sh; its flags, e.g.
# --quick, may follow the build directory). Results are kept under bench/results/.
#
#   bash bench/run_all.sh [BUILD_DIR] [compare.sh flags...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
shift || true
nproc=${SPMD_BENCH_NPROC:-4}
results=$here/results/run-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$results"

if [[ ! -x $build/bin/spmd-bench || ! -x $build/bin/spmdrun ]]; then
  echo "run_all.sh: build spmd-bench and spmdrun first (make build)" >&2
  exit 1
fi

echo "== spmd-bench, every collective, P=$nproc"
timeout -k 10 600 "$build/bin/spmdrun" --nproc-per-node "$nproc" "$build/bin/spmd-bench" \
  -c all_reduce,broadcast,reduce,all_gather,reduce_scatter,all_to_all,gather,scatter,sendrecv,barrier \
  -s 8,1K,64K,1M,16M -n 10 -w 61 | tee "$results/spmd-bench.txt"
status=${PIPESTATUS[0]}

echo
echo "== spmd vs Gloo, torch.distributed (gloo) and Open MPI"
bash "$here/compare.sh" --build "$build" --out "$results/compare" "$@" || status=1
echo "(results in $results)"
exit "$status"
