#!/usr/bin/env bash
# The one-host grid behind the selection tables (src/collectives/select.cpp, spmd-tune's
# tuned table): every shared-memory algorithm of a collective forced with SPMD_ALGO, the
# built-in default (SPMD_TUNING=off; from 64 KiB its trials time the shared-memory algorithms
# on the first calls, collectives/trials.hpp), the built-in table alone ("table": SPMD_TRIALS=0)
# and, with --tuned FILE, the default reading that tuned table, side by side, repetitions interleaved; prints the median time per size and row
# ([min–max]), marks the fastest forced one, and counts the cells where each default is within
# 10 % of it (and its worst ratio). Run it on an idle machine.
#
#   bench/thresholds.sh [--build DIR] [--nprocs "2 4 8"] [--reps N] [--iters N] [--tuned FILE]
#                       [--sizes 8,1K,16K,64K,256K,1M,4M,16M] [--collectives all_reduce,...]
#                       [--out DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build nprocs="2 4 8" reps=3 iters=20 sizes=8,1K,16K,64K,256K,1M,4M,16M out="" tuned=""
collectives=all_reduce,broadcast,reduce,all_gather,gather,scatter,reduce_scatter,all_to_all
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --nprocs) nprocs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --collectives) collectives=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tuned) tuned=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "thresholds.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -z $tuned || -r $tuned ]] || { echo "thresholds.sh: --tuned $tuned cannot be read" >&2; exit 2; }
[[ -x $build/bin/spmd-bench && -x $build/bin/spmdrun ]] || { echo "thresholds.sh: build spmd-bench and spmdrun in $build first" >&2; exit 2; }
out=${out:-$build/thresholds-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/log"
csv=$out/raw.csv
: >"$csv"

# The shared-memory algorithms each collective has (collectives/registry.cpp), then the
# defaults: "default" (the built-in table and the trials), "table" (the built-in table alone) and
# "tuned" (the table --tuned names).
algos_of() {
  case $1 in
    all_reduce) echo "shm_flat shm_rs_ag shm_cma" ;;
    *) echo "shm_flat shm_cma" ;;
  esac
  echo default table
  [[ -n $tuned ]] && echo tuned
}
run_one() {  # run_one ALGO COLLECTIVE P
  case $1 in
    default) SPMD_TUNING=off SPMD_DEBUG=INFO "${@:4}" ;;  # INFO: the trials' choices
    table) SPMD_TUNING=off SPMD_TRIALS=0 "${@:4}" ;;
    tuned) SPMD_TUNING=$tuned "${@:4}" ;;
    *) SPMD_TUNING=off SPMD_ALGO="$2=$1" "${@:4}" ;;
  esac
}

echo "# thresholds.sh at $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/table.md"
for ((rep = 1; rep <= reps; ++rep)); do
  for p in $nprocs; do
    for c in ${collectives//,/ }; do
      for a in $(algos_of "$c"); do
        run_one "$a" "$c" "$p" timeout 300 "$build/bin/spmdrun" --nproc-per-node "$p" "$build/bin/spmd-bench" \
          -c "$c" -s "$sizes" -n "$iters" -w 61 --csv --no-header --name "$a" 2>"$out/log/$a-$c-$p-$rep.txt" |
          sed -e 's/^\[[^]]*\]://' | grep -E "^$a," >>"$csv" ||
          echo "thresholds.sh: $c $a P=$p failed (rep $rep)" >&2
      done
    done
  done
done
/usr/bin/env python3 - "$csv" "$out/log" <<'EOF' | tee -a "$out/table.md"
import csv, glob, os, re, statistics, sys
from collections import Counter
# What the default's trials settled on per cell (its SPMD_DEBUG=INFO lines): the class's first
# bytes a rank, times P for the collectives whose selection looks at one block.
UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
BLOCKS = ("all_gather", "gather", "scatter")
TRIAL = re.compile(r"trials of (\w+) at (\d+) (B|KiB|MiB|GiB)-\S+ \S+ on one host \((\d+) ranks\).*; (\w+) from now on")
settled = {}
for path in glob.glob(os.path.join(sys.argv[2], "default-*.txt")):
    for m in TRIAL.finditer(open(path, errors="replace").read()):
        coll, first, p, name = m.group(1), int(m.group(2)) * UNIT[m.group(3)], int(m.group(4)), m.group(5)
        size = first * (p if coll in BLOCKS else 1)
        settled.setdefault((coll, p, size), Counter())[name] += 1
rows = {}
for r in csv.reader(open(sys.argv[1])):
    impl, coll, p, size, t = r[0], r[1], int(r[2]), int(r[3]), float(r[8])
    rows.setdefault((coll, p), {}).setdefault(size, {}).setdefault(impl, []).append(t)
def fmt(ts):
    m = statistics.median(ts)
    return f"{m:.1f} [{min(ts):.1f}–{max(ts):.1f}]"
DEFAULTS = ("default", "table", "tuned")
accept = {}
by_choice = {}
for (coll, p), by_size in sorted(rows.items()):
    algos = sorted({a for s in by_size.values() for a in s}, key=lambda a: (a in DEFAULTS, DEFAULTS.index(a) if a in DEFAULTS else 0, a))
    print(f"\n{coll}, P={p}: median µs per call [min–max over repetitions]; * = fastest forced\n")
    print("| size | " + " | ".join(algos) + " |")
    print("|---|" + "---|" * len(algos))
    for size in sorted(by_size):
        med = {a: statistics.median(by_size[size][a]) for a in algos if a in by_size[size]}
        forced = {a: m for a, m in med.items() if a not in DEFAULTS}
        if not forced: continue
        best = min(forced, key=forced.get)
        for d in DEFAULTS:
            if d in med:
                r = med[d] / forced[best]
                accept.setdefault((d, p), []).append((r, f"{coll} {size}"))
        # By its choice: the forced row of what the trials settled on in most launches (cells
        # they did not decide, below 16 KiB a rank: the default's own row).
        if "default" in med:
            choice = settled.get((coll, p, size))
            name = choice.most_common(1)[0][0] if choice else None
            r = forced[name] / forced[best] if name in forced else med["default"] / forced[best]
            by_choice.setdefault(p, []).append((r, f"{coll} {size}" + (f": {name}" if name else ""), name is not None))
        cells = [(fmt(by_size[size][a]) + (" *" if a == best else "")) if a in med else "—" for a in algos]
        print(f"| {size} | " + " | ".join(cells) + " |")
if accept:
    print("\nAcceptance: cells where the default is within 10 % of the fastest forced algorithm\n")
    print("| default | P | within 10 % | within 1.5x | worst |")
    print("|---|---|---|---|---|")
    for (d, p), cells in sorted(accept.items()):
        worst = max(cells)
        ok = sum(r <= 1.10 for r, _ in cells)
        ok15 = sum(r <= 1.5 for r, _ in cells)
        print(f"| {d} | {p} | {ok}/{len(cells)} | {ok15}/{len(cells)} | {worst[0]:.2f}x ({worst[1]}) |")
if by_choice:
    print("\nThe default by its choice: the forced row of the algorithm its trials settled on (in most")
    print("launches), where they decided; the default's own row elsewhere\n")
    print("| P | within 10 % | within 1.5x | worst | cells the trials decided |")
    print("|---|---|---|---|---|")
    for p, cells in sorted(by_choice.items()):
        worst = max(cells)
        ok = sum(r <= 1.10 for r, _, _ in cells)
        ok15 = sum(r <= 1.5 for r, _, _ in cells)
        print(f"| {p} | {ok}/{len(cells)} | {ok15}/{len(cells)} | {worst[0]:.2f}x ({worst[1]}) | {sum(t for _, _, t in cells)} |")
EOF
echo "raw rows: $csv"
