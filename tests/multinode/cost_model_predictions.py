#!/usr/bin/env python3
"""spmd-sim against every stored grid: how many forced rows it predicts within 25 %.

Judges every stored grid of docs/cost_model_grid.md (cost_model.sh's tables, with the SPMD_NET
each run measured and what its predictions added, the shared cores) with spmd-sim as it is
now: each forced row's measured time against spmd-sim's price for it, calls back to back
(spmd-sim --loop) where the grid timed loops, one call where it timed single calls (--sync).
cost_model_rescore.sh does the same for one grid at a time; this is every grid at once, so a
change to the schedules is weighed against every row ever measured. No job runs: seconds.

    cost_model_predictions.py BIN_DIR GRID.md [--section TEXT] [--all] [-v]

--section: only the grids whose heading holds TEXT; --all: unpinned grids too (the default:
pinned, as cost_model_candidates.py); -v: every row outside 25 %, with its error.
Columns: rows (forced rows spmd-sim prices), within 25 % of them, below 1 MiB and from 1 MiB,
and hier's rows.
"""
import collections
import sys

from cost_model_candidates import Sim, arguments, tabulate

WITHIN = 0.25


def forced_rows(grid):
    """(hosts, ranks a host, collective, algorithm, size, measured us) of every forced row."""
    for _rate, layout, coll, algo, size, measured, *_ in grid["rows"]:
        if algo.startswith(("default", "measured")) or coll in ("barrier", "all_to_allv"):
            continue
        try:
            hosts, per_host = map(int, layout.split("x"))
            yield hosts, per_host, coll, algo, int(size), float(measured)
        except ValueError:
            continue


def judge(grid, sim, verbose):
    count = collections.Counter()
    net = grid["net"] + ("," + grid["add"] if grid["add"] else "")
    rows = list(forced_rows(grid))
    sizes = collections.defaultdict(list)  # (hosts, ranks a host, collective) -> sizes
    for hosts, per_host, coll, _algo, size, _us in rows:
        sizes[(hosts, per_host, coll)].append(size)
    for (hosts, per_host, coll), asked in sizes.items():
        sim.prefetch(coll, hosts, per_host, asked, net, not grid["sync"])
    for hosts, per_host, coll, algo, size, us in rows:
        priced = sim.prices(coll, hosts, per_host, size, net, not grid["sync"]).get(algo)
        if priced is None:
            continue  # an algorithm spmd-sim no longer knows
        error = priced[0] / us - 1
        good = abs(error) <= WITHIN
        part = "from 1 MiB" if size >= (1 << 20) - 64 else "below 1 MiB"
        for key in ("rows", part + " rows") + (("hier rows",) if algo == "hier" else ()):
            count[key] += 1
            count[key.replace("rows", "within")] += good
        if verbose and not good:
            print(f"    {hosts}x{per_host} {coll} {algo} {size}: measured {us:.1f} us, priced {priced[0]:.1f} ({error:+.0%})")
    return count


def main():
    a = arguments(__doc__).parse_args()
    sim = Sim(a.bin_dir)

    def cells(c):
        parts = ("", "below 1 MiB ", "from 1 MiB ", "hier ")
        return " | ".join(f"{c[k + 'within']} of {c[k + 'rows']}" for k in parts)

    header = ["within 25 %", "below 1 MiB", "from 1 MiB", "hier's rows"]
    return tabulate(a, header, lambda grid: judge(grid, sim, a.v), cells, "rows")


if __name__ == "__main__":
    sys.exit(main())
