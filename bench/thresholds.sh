#!/usr/bin/env bash
# The measurements behind the default selection table (src/collectives/select.cpp): every
# shared-memory algorithm of a collective forced with SPMD_ALGO, side by side, repetitions
# interleaved, for P = 2 and 4; prints the median time per size and algorithm ([min–max]) and
# marks the fastest. Run it on an idle machine.
#
#   bench/thresholds.sh [--build DIR] [--nprocs "2 4"] [--reps N] [--iters N]
#                       [--sizes 1K,4K,16K,64K,256K,1M,4M,16M] [--collectives all_reduce,...]
#                       [--out DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build nprocs="2 4" reps=3 iters=30 sizes=1K,4K,16K,64K,256K,1M,4M,16M out=""
collectives=all_reduce,broadcast,all_gather,reduce_scatter
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --nprocs) nprocs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --collectives) collectives=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "thresholds.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $build/bin/spmd-bench && -x $build/bin/spmdrun ]] || { echo "thresholds.sh: build spmd-bench and spmdrun in $build first" >&2; exit 2; }
out=${out:-$build/thresholds-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
csv=$out/raw.csv
: >"$csv"

# The shared-memory algorithms each collective has (collectives/registry.cpp).
algos_of() {
  case $1 in
    all_reduce) echo "shm_flat shm_rs_ag shm_cma" ;;
    *) echo "shm_flat shm_cma" ;;
  esac
}

echo "# thresholds.sh at $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/table.md"
for ((rep = 1; rep <= reps; ++rep)); do
  for p in $nprocs; do
    for c in ${collectives//,/ }; do
      for a in $(algos_of "$c"); do
        SPMD_ALGO="$c=$a" timeout 300 "$build/bin/spmdrun" --nproc-per-node "$p" "$build/bin/spmd-bench" \
          -c "$c" -s "$sizes" -n "$iters" -w 5 --csv --no-header --name "$a" 2>/dev/null |
          sed -e 's/^\[[^]]*\]://' | grep -E "^$a," >>"$csv" ||
          echo "thresholds.sh: $c $a P=$p failed (rep $rep)" >&2
      done
    done
  done
done
/usr/bin/env python3 - "$csv" <<'EOF' | tee -a "$out/table.md"
import csv, statistics, sys
rows = {}
for r in csv.reader(open(sys.argv[1])):
    impl, coll, p, size, t = r[0], r[1], int(r[2]), int(r[3]), float(r[8])
    rows.setdefault((coll, p), {}).setdefault(size, {}).setdefault(impl, []).append(t)
def fmt(ts):
    m = statistics.median(ts)
    return f"{m:.1f} [{min(ts):.1f}–{max(ts):.1f}]"
for (coll, p), by_size in sorted(rows.items()):
    algos = sorted({a for s in by_size.values() for a in s})
    print(f"\n{coll}, P={p}: median µs per call [min–max over repetitions]; * = fastest\n")
    print("| size | " + " | ".join(algos) + " |")
    print("|---|" + "---|" * len(algos))
    for size in sorted(by_size):
        med = {a: statistics.median(by_size[size][a]) for a in algos if a in by_size[size]}
        best = min(med, key=med.get)
        cells = [(fmt(by_size[size][a]) + (" *" if a == best else "")) if a in med else "—" for a in algos]
        print(f"| {size} | " + " | ".join(cells) + " |")
EOF
echo "raw rows: $csv"
