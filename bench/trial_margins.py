#!/usr/bin/env python3
"""Judges the one-host trials' decisions of bench/thresholds.sh runs at several margins.

Every default job of a thresholds.sh run logs its trials (SPMD_DEBUG=INFO, under DIR/log/):
each line gives every candidate's time in the trials and the table's choice first. For a margin
m, the trials would keep the table's choice unless the fastest candidate beat it by more than m.
Each such decision is judged by the same run's loops of every algorithm forced (DIR/raw.csv):
within 10 % of the fastest forced row's median or not. The trials' readings do not depend on
the margin, so one run weighs every margin (src/collectives/trials.hpp, kOneHostKeep).

  bench/trial_margins.py DIR [DIR...] [--margins 0,0.05,0.1,0.15,0.2]
"""
import argparse
import csv
import glob
import os
import re
import statistics
import sys

UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
TRIAL = re.compile(r"trials of (\w+) at (\d+) (B|KiB|MiB|GiB)-\S+ \S+ on one host \((\d+) ranks\), "
                   r"the slowest rank's median of (\d+)(?: pairs of)?(?: calls)?: (.*?); \w+ from now on")
# Collectives whose spmd-bench size is every block together (the trials' class: one block).
BLOCKS = ("all_gather", "gather", "scatter")
DEFAULT_ROWS = ("default", "table", "tuned")


def forced_medians(run):
    rows = {}
    with open(os.path.join(run, "raw.csv")) as f:
        for r in csv.reader(f):
            impl, coll, p, size, t = r[0], r[1], int(r[2]), int(r[3]), float(r[8])
            if impl not in DEFAULT_ROWS:
                rows.setdefault((coll, p, size), {}).setdefault(impl, []).append(t)
    return {k: {a: statistics.median(v) for a, v in algos.items()} for k, algos in rows.items()}


def judge(run, margins):
    forced = forced_medians(run)
    met = {m: 0 for m in margins}
    ratios = {m: [] for m in margins}
    decisions = 0
    for path in sorted(glob.glob(os.path.join(run, "log", "default-*.txt"))):
        with open(path, errors="replace") as f:
            text = f.read()
        for t in TRIAL.finditer(text):
            coll, p = t.group(1), int(t.group(4))
            first = int(t.group(2)) * UNIT[t.group(3)]
            size = first * (p if coll in BLOCKS else 1)
            cell = forced.get((coll, p, size))
            if not cell:
                continue  # a class the run has no forced rows for
            times = [(c.rsplit(" ", 2)[0], float(c.rsplit(" ", 2)[1])) for c in t.group(6).split(", ")]
            if any(name not in cell for name, _ in times):
                continue
            table = times[0]
            fastest = min(times, key=lambda x: x[1])
            best = min(cell.values())
            decisions += 1
            for m in margins:
                chosen = fastest[0] if table[1] > fastest[1] * (1 + m) else table[0]
                r = cell[chosen] / best
                met[m] += r <= 1.10
                ratios[m].append(r)
    return decisions, met, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="thresholds.sh output folders (raw.csv, log/)")
    ap.add_argument("--margins", default="0,0.05,0.1,0.15,0.2")
    a = ap.parse_args()
    margins = [float(x) for x in a.margins.split(",")]
    print("| run | trials | " + " | ".join(f"margin {m:g}: within 10 % (geomean ratio)" for m in margins) + " |")
    print("|---|---|" + "---|" * len(margins))
    for run in a.runs:
        if not os.path.exists(os.path.join(run, "raw.csv")):
            sys.exit(f"trial_margins.py: {run} has no raw.csv (a bench/thresholds.sh --out folder?)")
        n, met, ratios = judge(run, margins)
        if n == 0:
            print(f"| {run} | 0 | " + " | ".join("-" for _ in margins) + " |")
            continue
        cells = [f"{met[m]} ({statistics.geometric_mean(ratios[m]):.3f})" for m in margins]
        print(f"| {run} | {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
