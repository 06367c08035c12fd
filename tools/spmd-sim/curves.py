#!/usr/bin/python3
"""curves.py: the busbw spmd's cost model expects at scale, drawn from spmd-sim.

    /usr/bin/python3 tools/spmd-sim/curves.py build/bin/spmd-sim -o docs/sim_busbw.png \\
        --net net=100Gbit@5us,host=20GB@1us --nodes 64,512,4096 --ranks-per-node 8

Runs spmd-sim for each collective (all_reduce, all_gather, reduce_scatter by default) and node
count, prints a markdown table (busbw in GB/s of the model's choice, and which algorithm it
is) and draws busbw against size, one panel per collective, one line per node count. Needs
matplotlib (Debian's python3-matplotlib) for the picture; the table needs nothing.
"""
import argparse
import csv
import io
import subprocess
import sys


def run_sim(sim, collective, nodes, per_node, net, sizes):
    out = subprocess.run([sim, "-c", collective, "--nodes", nodes, "--ranks-per-node", str(per_node), "-b", sizes[0],
                          "-e", sizes[1], "-f", "4", "--net", net, "--csv"], check=True, capture_output=True, text=True)
    rows = [r for r in csv.DictReader(io.StringIO(out.stdout)) if r["chosen"] == "1"]
    # spmd-sim rounds a size down to whole f32 elements per rank (as spmd-bench does), which
    # differs by node count: rows are keyed by the size asked for (the next power of 4 from 8).
    def asked(size):
        a = 8
        while a < size:
            a *= 4
        return a
    return {(int(r["nodes"]), asked(int(r["size"]))): (float(r["busbw_gbs"]), r["algorithm"], float(r["us"]))
            for r in rows}


def fmt_size(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div:
            return f"{b // div} {unit}"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sim", help="the spmd-sim binary")
    ap.add_argument("-o", "--output", help="PNG to draw (omit: the table only)")
    ap.add_argument("--net", default="net=100Gbit@5us,host=20GB@1us")
    ap.add_argument("--nodes", default="64,512,4096")
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--collectives", default="all_reduce,all_gather,reduce_scatter")
    ap.add_argument("--sizes", default="8,1G", help="smallest,largest (factor 4)")
    a = ap.parse_args()
    nodes = [int(n) for n in a.nodes.split(",")]
    colls = a.collectives.split(",")
    data = {c: run_sim(a.sim, c, a.nodes, a.ranks_per_node, a.net, a.sizes.split(",")) for c in colls}

    print(f"Links: `{a.net}`, {a.ranks_per_node} ranks per node; busbw GB/s of the model's choice (algorithm).\n")
    for c in colls:
        sizes = sorted({s for (_, s) in data[c]})
        print(f"**{c}**\n")
        print("| size | " + " | ".join(f"{n} nodes" for n in nodes) + " |")
        print("|---|" + "---|" * len(nodes))
        for s in sizes:
            cells = [f"{data[c][(n, s)][0]:.2f} ({data[c][(n, s)][1]})" if (n, s) in data[c] else "-" for n in nodes]
            print(f"| {fmt_size(s)} | " + " | ".join(cells) + " |")
        print()
    if not a.output:
        return 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("curves.py: no matplotlib (apt-get install python3-matplotlib); the table is above", file=sys.stderr)
        return 77
    fig, axes = plt.subplots(1, len(colls), figsize=(5 * len(colls), 4), squeeze=False)
    for ax, c in zip(axes[0], colls):
        for n in nodes:
            pts = sorted((s, v[0]) for (m, s), v in data[c].items() if m == n)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=f"{n} nodes")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"{c}, {a.ranks_per_node} ranks/node (predicted)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"spmd-sim, {a.net}")
    fig.tight_layout()
    fig.savefig(a.output, dpi=100)
    print(f"drawn: {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
