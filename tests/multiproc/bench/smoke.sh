#!/usr/bin/env bash
# Smoke tests of the comparison tooling (ctest runs each case; exit 77 = skipped):
#   smoke.sh table   SRC                compare_table.py on compare_sample.log: bound, shares, goals
#   smoke.sh plot    SRC                plot.py on compare_sample.log writes a PNG
#   smoke.sh spmd-plot SRC BIN          spmd-bench --plot at P=2 writes FILE.csv and FILE.png
#   smoke.sh spmd-sync SRC BIN          spmd-bench --sync: a barrier before each timed call;
#                                       --window: windows' means, said in the header
#   smoke.sh compare SRC BUILD          compare.sh --smoke: every peer built here runs, every
#                                       column and the plot appear, no run fails
#   smoke.sh trial-margins SRC          trial_margins.py on a made-up thresholds.sh run: a trial
#                                       line judged at each margin by the run's forced rows
set -u
mode=$1 src=$2
sample=$src/tests/multiproc/bench/compare_sample.log
work=$(mktemp -d "${TMPDIR:-/tmp}/spmd-bench-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect FILE TEXT: FILE has a line containing TEXT.
expect() { grep -qF -- "$2" "$1" || fail "$(basename "$1") has no line with: $2"; }
need_matplotlib() {
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null && return 0
  echo "skipped: /usr/bin/python3 has no matplotlib (scripts/install-deps.sh installs python3-matplotlib)"
  exit 77
}
# expect_png FILE: a non-empty PNG.
expect_png() {
  [[ -s $1 ]] || { fail "no PNG at $1"; return; }
  [[ $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$1 is not a PNG"
}

case $mode in
  table)
    python3 "$src/bench/compare_table.py" "$sample" > "$work/table.md" || fail "compare_table.py exited with $?"
    # 64 MiB, P=2: copy-bench's 2 x 64 MiB took 8000 us; the bound is P*S/C = 8000 us for
    # all_reduce (spmd 10000 us: 80%), P*S/(2C) = 4000 us for broadcast (spmd 8000 us: 50%).
    expect "$work/table.md" "| 2 | 64 MiB | 6.71 GB/s | 8.39 GB/s | 80% |"
    expect "$work/table.md" "| 2 | 64 MiB | 8.39 GB/s | 16.78 GB/s | 50% |"
    expect "$work/table.md" "| all_reduce | 2 | 64 MiB | met: 3.39× (≥ 1.5×) | — | met: 80% (≥ 80%) |"
    expect "$work/table.md" "| broadcast | 2 | 64 MiB | met: 2.12× (≥ 1.5×) | — | **missed**: 50% (≥ 80%) |"
    expect "$work/table.md" "| all_reduce | 2 | 8 B | met: 2.50× (≥ 1×) | met: 0.81 µs (≤ 1 µs) | — |"
    expect "$work/table.md" "| all_reduce | 4 | 8 B | **missed**: 0.44× (≥ 1×) | **missed**: 9.09 µs (≤ 8 µs) | — |"
    expect "$work/table.md" "### Goals: 26 of 50 met"
    expect "$work/table.md" "| P | size | spmd | memory bound | spmd share | mpi-shm | spmd/mpi-shm | mpi-tuned | spmd/mpi-tuned |"
    ;;
  plot)
    need_matplotlib
    /usr/bin/python3 "$src/bench/plot.py" "$sample" -o "$work/sample.png" || fail "plot.py exited with $?"
    expect_png "$work/sample.png"
    ;;
  spmd-plot)
    need_matplotlib
    bin=$3
    "$bin/spmdrun" --nproc-per-node 2 "$bin/spmd-bench" -c all_reduce,reduce_scatter -s 8,64K -n 1 -w 0 \
      --plot "$work/spmd.png" || fail "spmd-bench --plot exited with $?"
    expect "$work/spmd.csv" "spmd,reduce_scatter,2,65536,8192,f32,Sum,-,"
    expect_png "$work/spmd.png"
    ;;
  spmd-sync)
    bin=$3
    # The calls each rank made, from spmdrun --trace: "broadcast N barrier M".
    calls() {
      python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
names = [e.get("name", "") for e in (t["traceEvents"] if isinstance(t, dict) else t) if e.get("ph") == "X"]
print("broadcast", sum(n.startswith("broadcast") for n in names), "barrier", sum(n.startswith("barrier") for n in names))' "$1"
    }
    for mode in loop sync; do
      flags=()
      [[ $mode == sync ]] && flags=(--sync)
      "$bin/spmdrun" --nproc-per-node 2 --trace "$work/$mode.json" "$bin/spmd-bench" "${flags[@]}" -c broadcast -s 8 \
        -n 5 -w 0 >"$work/$mode.out" 2>&1 || fail "spmd-bench ${flags[*]} exited with $?: $(tail -5 "$work/$mode.out")"
      grep -qE '^(\[0\]:)? +8 +2 +f32' "$work/$mode.out" || fail "spmd-bench ${flags[*]} printed no row for 8 B: $(cat "$work/$mode.out")"
    done
    # Per rank: the checked call and 5 timed broadcasts; one barrier before the timed ones, and
    # with --sync one more before each of them.
    [[ $(calls "$work/loop.json") == "broadcast 12 barrier 2" ]] || fail "loop: $(calls "$work/loop.json")"
    [[ $(calls "$work/sync.json") == "broadcast 12 barrier 12" ]] || fail "--sync: $(calls "$work/sync.json")"
    # --window W: the median of W-call windows' means, said in the header; W beyond -n refused.
    "$bin/spmdrun" --nproc-per-node 2 "$bin/spmd-bench" --window 5 -c broadcast -s 8 -n 10 -w 0 >"$work/window.out" 2>&1 ||
      fail "spmd-bench --window 5 exited with $?: $(tail -5 "$work/window.out")"
    expect "$work/window.out" "# time: the median over windows of 5 calls of their mean"
    "$bin/spmd-bench" --window 6 -n 5 -c broadcast -s 8 >"$work/window_bad.out" 2>&1
    rc=$?
    ((rc == 2)) || fail "spmd-bench --window 6 -n 5 exited with $rc, not 2"
    expect "$work/window_bad.out" "--window 6 needs at least as many timed calls (-n 5)"
    ;;
  compare)
    build=$3
    bash "$src/bench/compare.sh" --smoke --build "$build" --out "$work/out" --timeout 120 \
      > "$work/stdout" 2> "$work/stderr" || fail "compare.sh --smoke exited with $?"
    table=$work/out/table.md
    cols=("spmd")
    [[ -x $build/bench/bin/gloo-bench ]] && cols+=(gloo)
    /usr/bin/python3 -c 'import torch' 2>/dev/null && cols+=(torch-gloo)
    [[ -x $build/bench/bin/mpi-bench ]] && cols+=(mpi-shm mpi-tcp mpi-tuned)
    for coll in all_reduce broadcast all_gather reduce_scatter; do expect "$table" "### $coll"; done
    for c in "${cols[@]}"; do expect "$table" "| $c |"; done
    expect "$table" "| memory bound | spmd share |"
    expect "$table" "### Goals:"
    if grep -q "failed" "$work/stderr"; then fail "a run failed: $(grep failed "$work/stderr")"; fi
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then expect_png "$work/out/busbw.png"; fi
    ((failures == 0)) || { echo "--- compare.sh stderr:"; cat "$work/stderr"; echo "--- table:"; cat "$table"; } >&2
    ;;
  trial-margins)
    # Forced loops of all_reduce, 4 ranks, 1 MiB: shm_rs_ag the fastest. The trials read the
    # table's shm_cma 0.90 ms and shm_rs_ag 0.80 (12.5 % faster): taken at margins under 12.5 %.
    run=$work/run
    mkdir -p "$run/log"
    for rep in 1 2 3; do
      for a in "shm_flat 1000" "shm_rs_ag 500" "shm_cma 2000" "default 600"; do
        set -- $a
        echo "$1,all_reduce,4,1048576,262144,f32,Sum,-,$(($2 + rep)),1,1,0" >>"$run/raw.csv"
      done
    done
    echo "[0]:[spmd INFO rank 0] trials of all_reduce at 1 MiB-2 MiB on one host (4 ranks), the slowest rank's median of 10 calls: shm_cma 0.9 ms, shm_flat 1.1 ms, shm_rs_ag 0.8 ms; shm_rs_ag from now on (the table chose shm_cma)" \
      >"$run/log/default-all_reduce-4-1.txt"
    python3 "$src/bench/trial_margins.py" "$run" --margins 0.05,0.15 >"$work/margins.md" ||
      fail "trial_margins.py exited with $?"
    expect "$work/margins.md" "| $run | 1 | 1 (1.000) | 0 (3.988) |"
    python3 "$src/bench/trial_margins.py" "$work/nothing" >/dev/null 2>&1 && fail "trial_margins.py took a folder without raw.csv"
    ((failures == 0)) || cat "$work/margins.md" >&2
    ;;
  *)
    echo "usage: smoke.sh table|plot|spmd-plot|spmd-sync|compare|trial-margins SRC [BIN|BUILD]" >&2
    exit 2
    ;;
esac
((failures == 0)) && echo "ok: $mode"
exit $((failures > 0))
