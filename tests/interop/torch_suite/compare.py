#!/usr/bin/python3
"""Summarises run_suite.py results: passed/failed/skipped per backend and world size, and
every test whose outcome differs between gloo and spmd, with the reason.

    compare.py DIR        (DIR holds gloo-2.jsonl, spmd-2.jsonl, gloo-3.jsonl, ...)
"""
import json
import os
import re
import sys


def load(path):
    results = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            results[r["test"]] = r
    return results


def reason(r):
    if r is None:
        return "not run"
    detail = r["detail"]
    if r["outcome"] == "failed":
        # The last exception line of the first failing rank says what went wrong.
        lines = [l.strip() for l in detail.splitlines() if re.match(r"^\s*[\w.]*(Error|Exception)\b", l)]
        detail = lines[-1] if lines else detail.splitlines()[-1] if detail else ""
    return detail[:160]


def names_gloo(r):
    return r is not None and r["outcome"] == "skipped" and "gloo" in r["detail"].lower()


def main(directory):
    sizes = sorted({int(m.group(1)) for f in os.listdir(directory) if (m := re.match(r"gloo-(\d+)\.jsonl$", f))})
    print("| WORLD_SIZE | backend | passed | failed | skipped | total |")
    print("|---|---|---|---|---|---|")
    runs = {}
    for size in sizes:
        for backend in ("gloo", "spmd"):
            path = os.path.join(directory, f"{backend}-{size}.jsonl")
            if not os.path.exists(path):
                continue
            runs[backend, size] = load(path)
            outcomes = [r["outcome"] for r in runs[backend, size].values()]
            print(f"| {size} | {backend} | {outcomes.count('passed')} | {outcomes.count('failed')} | "
                  f"{outcomes.count('skipped')} | {len(outcomes)} |")
    for size in sizes:
        if ("gloo", size) not in runs or ("spmd", size) not in runs:
            continue
        gloo, spmd = runs["gloo", size], runs["spmd", size]
        differ = sorted(t for t in set(gloo) | set(spmd)
                        if (gloo.get(t) or {}).get("outcome") != (spmd.get(t) or {}).get("outcome"))
        gated = [t for t in differ if names_gloo(spmd.get(t))]
        other = [t for t in differ if t not in gated]
        print(f"\nWORLD_SIZE {size}: {len(differ)} tests differ; {len(gated)} of them are gated to gloo by name "
              f"(spmd skips them):\n")
        if gated:
            print(", ".join(f"`{t}`" for t in gated))
        if other:
            print("\n| test | gloo | spmd | reason (spmd, else gloo) |")
            print("|---|---|---|---|")
            for t in other:
                g, s = gloo.get(t), spmd.get(t)
                why = reason(s) if s and s["outcome"] != "passed" else reason(g)
                print(f"| `{t}` | {g['outcome'] if g else '-'} | {s['outcome'] if s else '-'} | {why} |")
        else:
            print("\nEvery other test has the same outcome with both backends.")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
