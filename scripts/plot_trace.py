#!/usr/bin/env python3
"""Draws a merged spmd trace (spmdrun --trace FILE.json) as a PNG: one row per rank (and per
group within the rank), one bar per call, coloured by collective; the darker part of a bar is
the time the rank waited for its peers, the lighter part the rest (moving and reducing data).

Usage: /usr/bin/python3 scripts/plot_trace.py TRACE.json OUT.png [--from MS] [--to MS] [--title TEXT]
Needs matplotlib (Debian: python3-matplotlib, installed by scripts/install-deps.sh).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = {
    "all_reduce": "#1f77b4", "broadcast": "#ff7f0e", "reduce": "#2ca02c", "all_gather": "#d62728",
    "gather": "#9467bd", "scatter": "#8c564b", "reduce_scatter": "#e377c2", "all_to_all": "#7f7f7f",
    "barrier": "#bcbd22", "p2p": "#17becf",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--from", dest="start", type=float, default=None, help="first millisecond shown")
    ap.add_argument("--to", dest="end", type=float, default=None, help="last millisecond shown")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    groups = {}  # (pid, tid) -> group name
    calls = []
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            groups[(e["pid"], e.get("tid", 0))] = e["args"]["name"]
        elif e.get("ph") == "X":
            calls.append(e)
    if not calls:
        sys.exit(f"{a.trace}: no calls in this trace")
    tracks = sorted({(c["pid"], c.get("tid", 0)) for c in calls})
    row = {t: i for i, t in enumerate(tracks)}

    first = min(c["ts"] for c in calls) / 1000.0
    last = max(c["ts"] + c["dur"] for c in calls) / 1000.0
    span = (a.end if a.end is not None else last) - (a.start if a.start is not None else first)
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(tracks) + 1.6))
    used = set()
    for c in calls:
        start, dur = c["ts"] / 1000.0, c["dur"] / 1000.0
        if (a.start is not None and start + dur < a.start) or (a.end is not None and start > a.end):
            continue
        kind = c["name"].split(" ")[0]
        colour = COLOURS.get(kind, "#333333")
        used.add(kind)
        y = row[(c["pid"], c.get("tid", 0))]
        wait = min(c.get("args", {}).get("wait_us", 0.0) / 1000.0, dur)
        ax.barh(y, dur, left=start, height=0.7, color=colour, alpha=0.45, edgecolor=colour, linewidth=0.4)
        ax.barh(y, wait, left=start, height=0.7, color=colour, alpha=0.95, linewidth=0)
        label = c.get("args", {}).get("label", "")
        if label and dur > 0.06 * span:  # only where the bar has room for it
            ax.text(start + dur / 2, y, label.replace("ddp ", ""), ha="center", va="center", fontsize=6, clip_on=True)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([f"rank {p}" + (f"  {groups.get((p, t), '')}" if len({g for g in groups.values()}) > 1 else "")
                        for p, t in tracks])
    ax.invert_yaxis()
    ax.set_xlabel("time since the first call (ms)")
    if a.start is not None or a.end is not None:
        ax.set_xlim(left=a.start, right=a.end)
    ax.set_title(a.title or f"{a.trace}: {len(calls)} calls on {len({p for p, _ in tracks})} ranks")
    handles = [Patch(color=COLOURS.get(k, "#333333"), label=k) for k in sorted(used)]
    handles.append(Patch(color="#555555", alpha=0.95, label="waiting for peers (dark part)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(len(handles), 6),
              fontsize=8, frameon=False)
    ax.grid(axis="x", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print(f"{a.png}: {len(calls)} calls, {len(tracks)} rows")


if __name__ == "__main__":
    main()
