#!/usr/bin/env python3
"""Turns the CSV rows of spmd-bench and the peer benchmarks into the comparison table.

    python3 bench/compare_table.py results/raw.log [--baseline spmd] [--peers gloo,torch-gloo,...]

Reads every line that looks like a benchmark CSV row (a launcher's "[0]:" prefix is ignored),
takes the median time over repetitions for each (impl, collective, P, size), and prints a
markdown table per collective: each implementation's figure (latency at the smallest size,
algbw above it) and the ratio spmd/peer (algbw ratio: > 1 means spmd is faster; at the
smallest size the latency ratio: < 1 means spmd is faster). Then the issue's goals, checked.
"""
import argparse
import re
import statistics
import sys
from collections import defaultdict

ROW = re.compile(r"^(?:\[[^\]]*\]:\s*)?([\w.-]+),(\w+),(\d+),(\d+),(\d+),(\w+),([\w-]+),([\w-]+),([\d.]+),([\d.]+),([\d.]+),(\d+)\s*$")
LATENCY_MAX_BYTES = 64  # sizes up to this are reported as latency


def load(paths):
    times = defaultdict(list)  # (impl, coll, P, bytes) -> [time_us]
    wrong = defaultdict(int)
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                m = ROW.match(line.strip())
                if not m or m.group(1) == "impl":
                    continue
                key = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
                times[key].append(float(m.group(9)))
                wrong[key] += int(m.group(12))
    return times, wrong


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
    f = 2 * (n - 1) / n if coll == "all_reduce" else (n - 1) / n if coll in ("all_gather", "reduce_scatter", "all_to_all") else 1
    return bytes_ / (us * 1e-6) / 1e9 * f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--baseline", default="spmd")
    ap.add_argument("--peers", default="", help="comma-separated; default: every impl found")
    ap.add_argument("--gloo", default="gloo", help="the peer the goals are checked against")
    ap.add_argument("--spread", action="store_true", help="also show [min-max] over repetitions")
    ap.add_argument("--best", action="store_true",
                    help="compare each implementation's best repetition instead of the median (kinder to "
                         "peers with bimodal timings)")
    a = ap.parse_args()

    times, wrong = load(a.logs)
    med = {k: (min(v) if a.best else statistics.median(v)) for k, v in times.items()}
    impls = sorted({k[0] for k in med})
    peers = [p for p in a.peers.split(",") if p in impls] or [i for i in impls if i != a.baseline]
    colls = [c for c in ("all_reduce", "broadcast", "all_gather") if any(k[1] == c for k in med)]
    colls += sorted({k[1] for k in med} - set(colls))
    reps = max((len(v) for v in times.values()), default=0)

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
    goals = []
    for coll in colls:
        ns = sorted({k[2] for k in med if k[1] == coll})
        head = ["P", "size", a.baseline]
        for p in peers:
            head += [p, f"{a.baseline}/{p}"]
        print(f"### {coll}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for n in ns:
            sizes = sorted({k[3] for k in med if k[1] == coll and k[2] == n})
            for b in sizes:
                lat = b <= LATENCY_MAX_BYTES
                base = med.get((a.baseline, coll, n, b))
                cells = [str(n), fmt_size(b)]
                cells.append(cell(a.baseline, coll, n, b))
                for p in peers:
                    t = med.get((p, coll, n, b))
                    cells.append(cell(p, coll, n, b))
                    if t is None or base is None:
                        cells.append("—")
                    else:
                        cells.append(f"{base / t:.2f}×" if lat else f"{t / base:.2f}×")
                    if p == a.gloo and t is not None and base is not None:
                        if lat:
                            goals.append((base / t <= 0.5, f"{coll} P={n} {fmt_size(b)}: latency {fmt_time(base)} vs "
                                          f"{p} {fmt_time(t)} = {base / t:.2f}× (goal ≤ 0.5×)"))
                        elif b >= 64 * 1024:
                            goals.append((t / base >= 2, f"{coll} P={n} {fmt_size(b)}: algbw {fmt_bw(b, base)} vs "
                                          f"{p} {fmt_bw(b, t)} = {t / base:.2f}× (goal ≥ 2×)"))
                print("| " + " | ".join(cells) + " |")
        print()
        if 2 in ns and 4 in ns:
            for b in sorted({k[3] for k in med if k[1] == coll and k[2] == 4}):
                t2, t4 = med.get((a.baseline, coll, 2, b)), med.get((a.baseline, coll, 4, b))
                if t2 and t4 and b >= 1 << 20:
                    r = busbw(coll, 4, b, t4) / busbw(coll, 2, b, t2)
                    goals.append((r >= 0.5, f"{coll} {fmt_size(b)}: {a.baseline} busbw P=4 / P=2 = {r:.2f} "
                                  f"(no collapse: ≥ 0.5)"))

    if goals:
        ok = sum(1 for g in goals if g[0])
        print(f"### Goals: {ok} of {len(goals)} met\n")
        for passed, text in goals:
            print(f"- {'met' if passed else '**missed**'}: {text}")
        print()
    bad = {k: v for k, v in wrong.items() if v}
    if bad:
        print("### Wrong results\n")
        for k, v in sorted(bad.items()):
            print(f"- {k[0]} {k[1]} P={k[2]} {fmt_size(k[3])}: {v} wrong elements")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
