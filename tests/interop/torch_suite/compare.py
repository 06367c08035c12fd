#!/usr/bin/python3
"""Summarises run_suite.py results: passed/failed/skipped per backend and world size, every
test whose outcome differs between gloo and spmd with the reason, and how the tests gated to
gloo by name fared on spmd under --impersonate-gloo.

    compare.py DIR                (DIR holds gloo-2.jsonl, spmd-2.jsonl, gloo-3.jsonl, ...)
    compare.py --gated DIR SIZE   the tests gloo passed and spmd skipped as gloo-only, by name
"""
import json
import os
import re
import sys


def load(path):
    results = {}
    if os.path.exists(path):
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
        # The last exception line says what went wrong.
        lines = [l.strip() for l in detail.splitlines() if re.match(r"^\s*[\w.]*(Error|Exception)\b", l)]
        detail = lines[-1] if lines else detail.splitlines()[-1] if detail else ""
    return detail.replace("|", "/")[:160]


def names_gloo(r):
    return r is not None and r["outcome"] == "skipped" and "gloo" in r["detail"].lower()


def outcome(r):
    return r["outcome"] if r else "-"


def gated(directory, size):
    gloo, spmd = load(f"{directory}/gloo-{size}.jsonl"), load(f"{directory}/spmd-{size}.jsonl")
    return sorted(t for t in gloo if gloo[t]["outcome"] == "passed" and names_gloo(spmd.get(t)))


def counts(results):
    outcomes = [r["outcome"] for r in results.values()]
    return outcomes.count("passed"), outcomes.count("failed"), outcomes.count("skipped"), len(outcomes)


def main(directory):
    sizes = sorted({int(m.group(1)) for f in os.listdir(directory) if (m := re.match(r"gloo-(\d+)\.jsonl$", f))})
    print("| WORLD_SIZE | backend | passed | failed | skipped | total |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        for backend in ("gloo", "spmd"):
            results = load(f"{directory}/{backend}-{size}.jsonl")
            if results:
                print(f"| {size} | {backend} | " + " | ".join(str(n) for n in counts(results)) + " |")
    for size in sizes:
        gloo, spmd = load(f"{directory}/gloo-{size}.jsonl"), load(f"{directory}/spmd-{size}.jsonl")
        if not gloo or not spmd:
            continue
        differ = sorted(t for t in set(gloo) | set(spmd) if outcome(gloo.get(t)) != outcome(spmd.get(t)))
        by_name = [t for t in differ if names_gloo(spmd.get(t))]
        other = [t for t in differ if t not in by_name]
        print(f"\n**WORLD_SIZE {size}**: {len(differ)} tests differ; {len(by_name)} of them the suite gates to gloo "
              f"by name (skipped for spmd):\n")
        print(", ".join(f"`{t}`" for t in by_name) if by_name else "none")
        if other:
            print("\n| test | gloo | spmd | reason |")
            print("|---|---|---|---|")
            for t in other:
                g, s = gloo.get(t), spmd.get(t)
                why = reason(s) if s and s["outcome"] != "passed" else reason(g)
                print(f"| `{t}` | {outcome(g)} | {outcome(s)} | {why} |")
        else:
            print("\nEvery other test has the same outcome with both backends.")
        as_gloo = load(f"{directory}/spmd-as-gloo-{size}.jsonl")
        if as_gloo:
            passed, failed, skipped, total = counts(as_gloo)
            print(f"\nThe gloo-gated tests that gloo passes, on spmd with `--impersonate-gloo`: {passed} of {total} "
                  f"passed, {failed} failed, {skipped} skipped.")
            bad = [t for t in sorted(as_gloo) if as_gloo[t]["outcome"] != "passed"]
            if bad:
                print("\n| test | outcome | reason |")
                print("|---|---|---|")
                for t in bad:
                    print(f"| `{t}` | {as_gloo[t]['outcome']} | {reason(as_gloo[t])} |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--gated":
        print(" ".join(gated(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
