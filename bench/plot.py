#!/usr/bin/python3
"""plot.py: busbw against message size, one line per implementation, one panel per collective and P.

    /usr/bin/python3 bench/plot.py bench/results/compare-<time>/raw.log -o busbw.png
    /usr/bin/python3 bench/plot.py spmd.csv -o spmd.png --title "spmd, P=4"

Reads the CSV rows that spmd-bench, the peer benchmarks and compare.sh write (any mix of files;
a launcher's "[0]:" prefix is ignored, like compare_table.py does), takes the median time over
repetitions and draws busbw (nccl-tests' definition) on a log size axis. Where copy-bench rows
are present (compare.sh's memcpy), the memory bound is a dashed line (compare_table.py's
definition). Needs matplotlib (Debian's python3-matplotlib, for /usr/bin/python3).
"""
import argparse
import importlib.util
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_table import DEFAULT_ORDER, bound_us, busbw, fmt_size, load  # noqa: E402


def series(med, copy_med):
    """{(collective, P): {impl: [(bytes, busbw)]}}, the memory bound under impl None."""
    panels = {}
    for (impl, coll, n, b), t in med.items():
        if b > 0 and t > 0:
            panels.setdefault((coll, n), {}).setdefault(impl, []).append((b, busbw(coll, n, b, t)))
    for (coll, n), lines in panels.items():
        sizes = sorted({b for pts in lines.values() for b, _ in pts})
        bound = [(b, busbw(coll, n, b, t)) for b in sizes for t in [bound_us(copy_med, coll, n, b)] if t]
        if bound:
            lines[None] = bound
    return panels


def draw(panels, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colls = sorted({c for c, _ in panels}, key=lambda c: (DEFAULT_ORDER + (c,)).index(c))
    ns = sorted({n for _, n in panels})
    impls = sorted({i for lines in panels.values() for i in lines if i is not None}, key=lambda i: (i != "spmd", i))
    colors = {impl: f"C{k % 10}" for k, impl in enumerate(impls)}
    fig, axes = plt.subplots(len(colls), len(ns), figsize=(5.5 * len(ns), 3.6 * len(colls)), squeeze=False)
    for r, coll in enumerate(colls):
        for c, n in enumerate(ns):
            ax = axes[r][c]
            lines = panels.get((coll, n))
            ax.set_title(f"{coll}, P={n}")
            if not lines:
                ax.set_axis_off()
                continue
            for impl in impls + [None]:
                pts = sorted(lines.get(impl, []))
                if not pts:
                    continue
                xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                if impl is None:
                    ax.plot(xs, ys, "k--", marker="_", markersize=8, linewidth=1.2, label="memory bound")
                else:
                    ax.plot(xs, ys, marker="o", markersize=3, color=colors[impl], label=impl,
                            linewidth=2.2 if impl == "spmd" else 1.2)
            sizes = sorted({b for pts in lines.values() for b, _ in pts})
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes)
            ax.set_xticklabels([fmt_size(b).replace(" ", "") for b in sizes], rotation=45, fontsize=7)
            ax.set_xlabel("size")
            ax.set_ylabel("busbw (GB/s)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="spmd-bench/peer CSV output or compare.sh raw.log files")
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    if importlib.util.find_spec("matplotlib") is None:
        sys.exit("plot.py: matplotlib is missing (apt install python3-matplotlib; run with /usr/bin/python3)")
    try:
        times, _, copies = load(a.inputs)
    except OSError as e:
        sys.exit(f"plot.py: cannot read {e.filename}: {e.strerror}")
    med = {k: statistics.median(v) for k, v in times.items()}
    copy_med = {k: statistics.median(v) for k, v in copies.items()}
    panels = series(med, copy_med)
    if not panels:
        sys.exit(f"plot.py: no benchmark rows with a size in {', '.join(a.inputs)} (expected spmd-bench --csv output)")
    draw(panels, a.output, a.title)
    print(f"plot.py: wrote {a.output} ({len(panels)} panel(s))", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
