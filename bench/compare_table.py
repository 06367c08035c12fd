#!/usr/bin/env python3
"""Turns the CSV rows of spmd-bench, the peer benchmarks and copy-bench into the comparison table.

    python3 bench/compare_table.py results/raw.log [--baseline spmd] [--peers mpi-shm,mpi-tuned,...]

Reads every line that looks like a benchmark CSV row (a launcher's "[0]:" prefix is ignored),
takes the median time over repetitions for each (impl, collective, P, size), and prints a
markdown table per collective: each implementation's figure (latency at the smallest sizes,
algbw above), the memory bound from copy-bench's rows with the baseline's share of it, and the
ratio spmd/peer (algbw ratio: > 1 means spmd is faster; at the smallest sizes the latency
ratio: < 1 means spmd is faster). Then the goals, checked size by size.
"""
import argparse
import math
import re
import statistics
import sys
from collections import defaultdict

ROW = re.compile(r"^(?:\[[^\]]*\]:\s*)?([\w.-]+),(\w+),(\d+),(\d+),(\d+),(\w+),([\w-]+),([\w-]+),([\d.]+),([\d.]+),([\d.]+),(\d+)\s*$")
COPY_ROW = re.compile(r"^(?:\[[^\]]*\]:\s*)?memcpy,(\d+),(\d+),([\d.]+),([\d.]+)\s*$")
LATENCY_MAX_BYTES = 64  # sizes up to this are reported as latency
BOUND_MIN_BYTES = 64 * 1024  # below this a round of copy-bench is mostly waking P processes
DEFAULT_ORDER = ("all_reduce", "broadcast", "all_gather", "reduce_scatter")

# Bytes that must be read plus bytes that must be written, for a message of b bytes on n ranks
# (every input byte read once, every output byte written once; b as in the table: the
# all_gather output, the reduce_scatter input). Bound time = traffic / (2C), C = copy-bench's
# rate (a memcpy reads and writes each byte once).
TRAFFIC = {
    "all_reduce": (lambda n, b: 2 * n * b, "P·S/C"),           # n inputs read, n outputs written, in place
    "broadcast": (lambda n, b: n * b, "P·S/(2C)"),             # the root's S read, P−1 copies written
    "all_gather": (lambda n, b: (n + 1) * b, "(P+1)·S/(2C)"),  # S of inputs read, P outputs of S written
    "reduce_scatter": (lambda n, b: (n + 1) * b, "(P+1)·S/(2C)"),  # P inputs of S read, S of outputs
}


def load(paths):
    times = defaultdict(list)  # (impl, coll, P, bytes) -> [time_us]
    wrong = defaultdict(int)
    copies = defaultdict(list)  # (P, bytes) -> [time_us]
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                c = COPY_ROW.match(line)
                if c:
                    copies[(int(c.group(1)), int(c.group(2)))].append(float(c.group(3)))
                    continue
                m = ROW.match(line)
                if not m or m.group(1) == "impl":
                    continue
                key = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
                times[key].append(float(m.group(9)))
                wrong[key] += int(m.group(12))
    return times, wrong, copies


def fmt_size(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def fmt_time(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def fmt_bw(bytes_, us):
    return f"{bytes_ / (us * 1e-6) / 1e9:.2f} GB/s"


def busbw(coll, n, bytes_, us):
    spread = ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter")
    f = 2 * (n - 1) / n if coll == "all_reduce" else (n - 1) / n if coll in spread else 1
    return bytes_ / (us * 1e-6) / 1e9 * f


def bound_us(copy_med, coll, n, b):
    """The memory bound's time for coll at b bytes on n ranks, or None (no copy rows, small size)."""
    if coll not in TRAFFIC or b < BOUND_MIN_BYTES:
        return None
    sizes = [size for (p, size) in copy_med if p == n]
    if not sizes:
        return None
    nearest = min(sizes, key=lambda s: abs(math.log(s) - math.log(b)))
    rate = n * nearest / copy_med[(n, nearest)]  # C, bytes per µs, all n processes together
    return TRAFFIC[coll][0](n, b) / (2 * rate)


def shm_goals(med, copy_med, base, ref, colls):
    """The goals against Open MPI's default shared memory, size by size: (row, cells) pairs, a
    cell being (met, text) or None where that goal does not apply."""
    rows = []
    for coll in [c for c in DEFAULT_ORDER if c in colls]:
        for n in sorted({k[2] for k in med if k[1] == coll}):
            for b in sorted({k[3] for k in med if k[1] == coll and k[2] == n}):
                t = med.get((base, coll, n, b))
                if t is None:
                    continue
                cells = []
                r = med.get((ref, coll, n, b))
                if r is None:
                    cells.append(None)
                else:
                    need = 1.5 if b >= 64 * 1024 else 1.0
                    cells.append((r / t >= need, f"{r / t:.2f}× (≥ {need:g}×)"))
                limit = {2: 1.0, 4: 8.0}.get(n) if coll == "all_reduce" and b <= 8 else None
                cells.append(None if limit is None else (t <= limit, f"{t:.2f} µs (≤ {limit:g} µs)"))
                bound = bound_us(copy_med, coll, n, b) if n == 2 and 16 << 20 <= b <= 64 << 20 else None
                cells.append(None if bound is None else (bound / t >= 0.8, f"{100 * bound / t:.0f}% (≥ 80%)"))
                rows.append(((coll, n, b), cells))
    return rows


def print_shm_goals(rows, base, ref):
    cells = [c for _, cs in rows for c in cs if c is not None]
    met = sum(1 for c in cells if c[0])
    print(f"### Goals: {met} of {len(cells)} met\n")
    print(f"{base}/{ref} = {ref}'s time / {base}'s (speed ratio; > 1: {base} faster): ≥ 1× at every size and "
          f"≥ 1.5× from 64 KiB; all_reduce 8 B latency ≤ 1 µs at P=2 and ≤ 8 µs at P=4; from 16 to 64 MiB at "
          f"P=2, ≥ 80% of the memory bound.\n")
    print(f"| collective | P | size | {base} vs {ref} | latency | memory bound |")
    print("|---|---|---|---|---|---|")
    for (coll, n, b), cs in rows:
        text = ["—" if c is None else f"{'met' if c[0] else '**missed**'}: {c[1]}" for c in cs]
        print(f"| {coll} | {n} | {fmt_size(b)} | " + " | ".join(text) + " |")
    print()


def gloo_goals(med, base, gloo, colls):
    """The earlier goals against Gloo: ≥ 2× algbw from 64 KiB, ≤ 0.5× latency, no collapse at P=4."""
    goals = []
    for coll in colls:
        for n in sorted({k[2] for k in med if k[1] == coll}):
            for b in sorted({k[3] for k in med if k[1] == coll and k[2] == n}):
                t, g = med.get((base, coll, n, b)), med.get((gloo, coll, n, b))
                if t is None or g is None:
                    continue
                if b <= LATENCY_MAX_BYTES:
                    goals.append((t / g <= 0.5, f"{coll} P={n} {fmt_size(b)}: latency {fmt_time(t)} vs {gloo} "
                                  f"{fmt_time(g)} = {t / g:.2f}× (goal ≤ 0.5×)"))
                elif b >= 64 * 1024:
                    goals.append((g / t >= 2, f"{coll} P={n} {fmt_size(b)}: algbw {fmt_bw(b, t)} vs {gloo} "
                                  f"{fmt_bw(b, g)} = {g / t:.2f}× (goal ≥ 2×)"))
        for b in sorted({k[3] for k in med if k[1] == coll and k[2] == 4}):
            t2, t4 = med.get((base, coll, 2, b)), med.get((base, coll, 4, b))
            if t2 and t4 and b >= 1 << 20:
                r = busbw(coll, 4, b, t4) / busbw(coll, 2, b, t2)
                goals.append((r >= 0.5, f"{coll} {fmt_size(b)}: {base} busbw P=4 / P=2 = {r:.2f} (no collapse: ≥ 0.5)"))
    if goals:
        print(f"### Goals: {sum(1 for g in goals if g[0])} of {len(goals)} met\n")
        for passed, text in goals:
            print(f"- {'met' if passed else '**missed**'}: {text}")
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--baseline", default="spmd")
    ap.add_argument("--peers", default="", help="comma-separated; default: every impl found")
    ap.add_argument("--goals", choices=("shm", "gloo", "none"), default="shm",
                    help="shm (default): against Open MPI's default shared memory (--reference) and the "
                         "memory bound; gloo: the earlier goals against Gloo (--gloo)")
    ap.add_argument("--reference", default="mpi-shm", help="the peer the shm goals are checked against")
    ap.add_argument("--gloo", default="gloo", help="the peer the gloo goals are checked against")
    ap.add_argument("--spread", action="store_true", help="also show [min-max] over repetitions")
    ap.add_argument("--best", action="store_true",
                    help="compare each implementation's best repetition instead of the median (kinder to "
                         "peers with bimodal timings)")
    a = ap.parse_args()

    try:
        times, wrong, copies = load(a.logs)
    except OSError as e:
        sys.exit(f"compare_table.py: cannot read {e.filename}: {e.strerror}")
    pick = min if a.best else statistics.median
    med = {k: pick(v) for k, v in times.items()}
    copy_med = {k: pick(v) for k, v in copies.items()}
    impls = sorted({k[0] for k in med})
    peers = [p for p in a.peers.split(",") if p in impls] or [i for i in impls if i != a.baseline]
    colls = [c for c in DEFAULT_ORDER if any(k[1] == c for k in med)]
    colls += sorted({k[1] for k in med} - set(colls))
    reps = max((len(v) for v in times.values()), default=0)
    with_bound = bool(copy_med)

    def cell(impl, coll, n, b):
        t = med.get((impl, coll, n, b))
        if t is None:
            return "—"
        lat = b <= LATENCY_MAX_BYTES
        text = fmt_time(t) if lat else fmt_bw(b, t)
        runs = times[(impl, coll, n, b)]
        if a.spread and len(runs) > 1:
            lo, hi = min(runs), max(runs)
            text += f" [{lo:.0f}–{hi:.0f}]" if lat else f" [{b / hi / 1e3:.2f}–{b / lo / 1e3:.2f}]"
        return text

    print(f"{'Best' if a.best else 'Median'} of {reps} repetition(s) of each run's slowest-rank median time. Cells: latency at "
          f"≤ {LATENCY_MAX_BYTES} B, algbw (size/time) above{'; [min–max] over repetitions (µs or GB/s)' if a.spread else ''}. Ratio = {a.baseline}/peer: algbw ratio "
          f"(> 1: {a.baseline} faster); at ≤ {LATENCY_MAX_BYTES} B the latency ratio (< 1: {a.baseline} faster).\n")
    if with_bound:
        formulas = "; ".join(f"{c} {TRAFFIC[c][1]}" for c in DEFAULT_ORDER if c in colls)
        print(f"Memory bound (from {fmt_size(BOUND_MIN_BYTES)}): the algbw at which every input byte is read once "
              f"and every output byte written once at copy-bench's rate C (P processes copying S bytes each at "
              f"once; bound time = bytes read + written over 2C): {formulas}. "
              f"`{a.baseline} share` = bound time / {a.baseline}'s time.\n")
    if any(k[0] == "torch-gloo" and k[1] == "reduce_scatter" for k in med):
        print("torch-gloo's reduce_scatter is an all_reduce of the whole input and a copy of the rank's block: "
              "torch 1.13's gloo backend has no reduce_scatter.\n")

    for coll in colls:
        ns = sorted({k[2] for k in med if k[1] == coll})
        head = ["P", "size", a.baseline]
        if with_bound and coll in TRAFFIC:
            head += ["memory bound", f"{a.baseline} share"]
        for p in peers:
            head += [p, f"{a.baseline}/{p}"]
        print(f"### {coll}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for n in ns:
            for b in sorted({k[3] for k in med if k[1] == coll and k[2] == n}):
                lat = b <= LATENCY_MAX_BYTES
                base = med.get((a.baseline, coll, n, b))
                cells = [str(n), fmt_size(b), cell(a.baseline, coll, n, b)]
                if with_bound and coll in TRAFFIC:
                    bound = bound_us(copy_med, coll, n, b)
                    cells.append("—" if bound is None else fmt_bw(b, bound))
                    cells.append("—" if bound is None or base is None else f"{100 * bound / base:.0f}%")
                for p in peers:
                    t = med.get((p, coll, n, b))
                    cells.append(cell(p, coll, n, b))
                    if t is None or base is None:
                        cells.append("—")
                    else:
                        cells.append(f"{base / t:.2f}×" if lat else f"{t / base:.2f}×")
                print("| " + " | ".join(cells) + " |")
        print()

    if a.goals == "shm":
        rows = shm_goals(med, copy_med, a.baseline, a.reference, colls)
        if rows:
            print_shm_goals(rows, a.baseline, a.reference)
    elif a.goals == "gloo":
        gloo_goals(med, a.baseline, a.gloo, colls)

    bad = {k: v for k, v in wrong.items() if v}
    if bad:
        print("### Wrong results\n")
        for k, v in sorted(bad.items()):
            print(f"- {k[0]} {k[1]} P={k[2]} {fmt_size(k[3])}: {v} wrong elements")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
