#!/usr/bin/env python3
"""Where the defaults across hosts lose: the model's choice, or the trials' reading?

Judges every stored grid of docs/cost_model_grid.md (cost_model.sh's tables, with the SPMD_NET
each run measured) with spmd-sim as it is now, cell by cell (layout, collective, size), by the
forced rows the grid timed:
  one call   the model's first by one call's price (what selection takes: the model's choice)
  loop       the cheapest by a loop's price (spmd-sim --loop: calls back to back, as timed)
  trials     the best of the trials' candidates (spmd-sim's 'tried' column, the library's
             own: the model's first four by one call's price, each within 2x of the cheapest,
             3x under 200 us; none over 0.5 s), had the trials read them right
Each column counts the cells whose algorithm's forced row is within 10 % of the best forced row;
"one call" is cost_model_rescore.sh's "choice within 10 %" count, over every grid at once.
No job runs: a second per grid.

    cost_model_candidates.py BIN_DIR GRID.md [--section TEXT] [--all] [--candidates N] [-v]

--section: only the grids whose heading holds TEXT; --all: unpinned grids too (the default:
pinned, where a job's ranks sit where the last one's did); --candidates N: as if the trials took
the model's first N within the same reach (a change weighed before it is made; trials.hpp's rule
mirrored below); -v: list the cells where no candidate
is within 10 %, and those where the loop's cheapest is another algorithm than one call's.
"""
import argparse
import collections
import re
import subprocess
import sys

# For --candidates N only (spmd-sim's 'tried' column otherwise), trials.hpp's rule: candidates
# within kNear (kShortNear for calls priced under kShortCall) of the cheapest; none for calls
# priced over kMaxTrialSeconds. WITHIN: the grid's 10 %.
NEAR, SHORT_NEAR, SHORT_CALL_US, MAX_TRIAL_US, WITHIN = 2.0, 3.0, 200.0, 5e5, 1.10


def grids(path):
    """Every '#'-headed table of `path`: its heading, its links (SPMD_NET), what spmd-sim's
    predictions added to them ('add': the shared cores, "" where none), whether its calls were
    timed one at a time ('sync': cost_model.sh --sync) and its rows."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        if line.startswith("#"):
            cur = {"title": line.strip("# \n"), "net": None, "add": "", "sync": False, "rows": []}
            out.append(cur)
        elif cur is not None and line.startswith("| ") and not line.startswith("| rate"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 6:
                cur["rows"].append(cells)
        elif cur is not None and cur["net"] is None:
            m = re.search(r"SPMD_NET=([^`\s]+)`", line)
            if m:
                cur["net"] = m.group(1)
                added = re.search(r"predictions add `([^`]+)`", line)
                cur["add"] = added.group(1) if added else ""
                cur["sync"] = "--sync" in line
    return [g for g in out if g["net"] and g["rows"]]


class Sim:
    def __init__(self, bin_dir):
        self.bin, self.cache = f"{bin_dir}/spmd-sim", {}

    def prices(self, coll, hosts, per_host, size, net, loop):
        """{algorithm: (us, chosen, tried)}: chosen marks selection's choice (the model's first),
        tried the trials' candidates."""
        key = (coll, hosts, per_host, size, net, loop)
        if key not in self.cache:
            self.prefetch(coll, hosts, per_host, [size], net, loop)
        return self.cache[key]

    def prefetch(self, coll, hosts, per_host, sizes, net, loop):
        """Prices every size of `sizes` with one spmd-sim run (a process per cell took the
        scripts most of their time)."""
        sizes = sorted({s for s in sizes if (coll, hosts, per_host, s, net, loop) not in self.cache})
        if not sizes:
            return
        cmd = [self.bin, "-c", coll, "--nodes", str(hosts), "--ranks-per-node", str(per_host),
               "-s", ",".join(map(str, sizes)), "--net", net, "--csv"] + (["--loop"] if loop else [])
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"cost_model_candidates.py: {' '.join(cmd)} failed: {run.stderr.strip()}")
        # One group of rows per size asked, in order, each led by selection's choice (chosen = 1);
        # sizes rounded to whole elements may print alike, so groups are told apart by that mark.
        groups = []
        for r in (r.split(",") for r in run.stdout.splitlines() if r[:1].isdigit()):
            if r[5] == "1":
                groups.append({})
            groups[-1][r[3]] = (float(r[4]), r[5] == "1", r[7] == "1")
        if not groups:  # one node: the model prices nothing
            groups = [{} for _ in sizes]
        if len(groups) != len(sizes):
            sys.exit(f"cost_model_candidates.py: {' '.join(cmd)} printed {len(groups)} sizes, not {len(sizes)}")
        for size, group in zip(sizes, groups):
            self.cache[(coll, hosts, per_host, size, net, loop)] = group


def judge(grid, sim, candidates_most, verbose):
    forced = collections.defaultdict(dict)  # (layout, collective, size) -> {algorithm: us}
    for rate, layout, coll, algo, size, measured, *_ in grid["rows"]:
        if algo.startswith(("default", "measured")) or coll in ("barrier", "all_to_allv"):
            continue
        try:
            forced[(layout, coll, int(size))][algo] = float(measured)
        except ValueError:
            pass
    by_call = collections.defaultdict(list)  # (layout, collective) -> sizes
    for layout, coll, size in forced:
        by_call[(layout, coll)].append(size)
    for (layout, coll), sizes in by_call.items():
        hosts, per_host = map(int, layout.split("x"))
        for loop in (False, True):
            sim.prefetch(coll, hosts, per_host, sizes, grid["net"], loop)
    count = collections.Counter()
    for (layout, coll, size), rows in sorted(forced.items()):
        hosts, per_host = map(int, layout.split("x"))
        one = sim.prices(coll, hosts, per_host, size, grid["net"], False)
        loop = sim.prices(coll, hosts, per_host, size, grid["net"], True)
        if len(rows) < 2 or not one or any(a not in rows for a in one):
            continue  # a cell the grid did not time whole (or an algorithm it did not know)
        order = sorted(one, key=lambda a: one[a][0])
        first = next(a for a in one if one[a][1])
        cheapest_loop = min(loop, key=lambda a: loop[a][0])
        cheapest = one[order[0]][0]
        if candidates_most is None:
            candidates = [a for a in order if one[a][2]] or [first]  # none tried: the model's first runs
        elif cheapest > MAX_TRIAL_US:
            candidates = [first]
        else:
            near = SHORT_NEAR if cheapest < SHORT_CALL_US else NEAR
            candidates = [a for a in order if one[a][0] <= near * cheapest][:candidates_most]
        best, best_candidate = min(rows.values()), min(rows[a] for a in candidates)
        count["cells"] += 1
        count["one call"] += rows[first] <= WITHIN * best
        count["loop"] += rows[cheapest_loop] <= WITHIN * best
        count["trials"] += best_candidate <= WITHIN * best
        if verbose and best_candidate > WITHIN * best:
            print(f"    {layout} {coll} {size}: no candidate within 10 % ({', '.join(candidates)}), "
                  f"best {min(rows, key=rows.get)} {best:.0f} us")
        if verbose and cheapest_loop != first:
            print(f"    {layout} {coll} {size}: one call {first} {rows[first]:.0f} us, "
                  f"loop {cheapest_loop} {rows[cheapest_loop]:.0f}, best {best:.0f}")
    return count


def arguments(doc):
    """The command line of this script and cost_model_predictions.py: BIN_DIR GRID.md
    [--section TEXT] [--all] [-v] (the parser, for more options)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("bin_dir")
    p.add_argument("grid")
    p.add_argument("--section", default="")
    p.add_argument("--all", action="store_true")
    p.add_argument("-v", action="store_true")
    return p


def selected(a):
    """The grids the command line names: headings that hold --section, pinned unless --all."""
    return [g for g in grids(a.grid) if a.section in g["title"] and ("pin" in g["rows"][0][0] or a.all)]


def tabulate(a, header, judge_grid, cells, judged):
    """Prints a table of every grid the command line selects and their sum: `judge_grid(grid)`
    counts a grid (a Counter; a grid whose count `judged` is 0 is left out), `cells(counter)`
    its row's cells after the title, `header` the titles after 'grid'. The exit status: 1 where
    no grid held anything to judge."""
    print(f"| grid | {' | '.join(header)} |")
    print("|---" * (len(header) + 1) + "|")
    total = collections.Counter()
    for grid in selected(a):
        c = judge_grid(grid)
        if c[judged]:
            total += c
            print(f"| {grid['title']} | {cells(c)} |")
    print(f"| all | {cells(total)} |")
    return 0 if total[judged] else 1


def main():
    p = arguments(__doc__)
    p.add_argument("--candidates", type=int, help="as if the trials tried the model's first N (default: spmd-sim's 'tried')")
    a = p.parse_args()
    sim = Sim(a.bin_dir)
    return tabulate(a, ["cells", "one call's choice", "loop's cheapest", "best of the trials' candidates"],
                    lambda grid: judge(grid, sim, a.candidates, a.v),
                    lambda c: f"{c['cells']} | {c['one call']} | {c['loop']} | {c['trials']}", "cells")


if __name__ == "__main__":
    sys.exit(main())
