#!/usr/bin/env python3
"""The mpi backend's overhead table from overhead.sh's CSV rows.

    python3 bench/mpi/overhead_table.py raw.log

For every (collective, P, size): the median over repetitions of each run's slowest-rank
median time, for Open MPI called directly (impl "mpi") and through spmd (impl "spmd-mpi"),
and the overhead spmd/mpi - 1; then the goals: <= 5 % at 8 B, <= 2 % from 64 KiB.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from compare_table import fmt_size, fmt_time, load  # noqa: E402


def main():
    times, wrong, _ = load(sys.argv[1:])
    med = {k: statistics.median(v) for k, v in times.items()}
    goals = []
    for coll in sorted({k[1] for k in med}):
        print(f"### {coll}\n")
        print("| P | size | Open MPI | spmd over mpi | overhead |")
        print("|---|---|---|---|---|")
        for n in sorted({k[2] for k in med if k[1] == coll}):
            for b in sorted({k[3] for k in med if k[1] == coll and k[2] == n}):
                m, s = med.get(("mpi", coll, n, b)), med.get(("spmd-mpi", coll, n, b))
                if m is None or s is None:
                    continue
                over = s / m - 1
                print(f"| {n} | {fmt_size(b)} | {fmt_time(m)} | {fmt_time(s)} | {over * 100:+.1f} % |")
                if b == 8:
                    goals.append((over <= 0.05, f"{coll} P={n} 8 B: {over * 100:+.1f} % (goal ≤ 5 %)"))
                elif b >= 64 * 1024:
                    goals.append((over <= 0.02, f"{coll} P={n} {fmt_size(b)}: {over * 100:+.1f} % (goal ≤ 2 %)"))
        print()
    if goals:
        print(f"### Goals: {sum(g[0] for g in goals)} of {len(goals)} met\n")
        for ok, text in goals:
            print(f"- {'met' if ok else '**missed**'}: {text}")
    bad = {k: v for k, v in wrong.items() if v}
    for k, v in bad.items():
        print(f"- **{v} wrong elements**: {k}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
