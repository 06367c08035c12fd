#!/usr/bin/env python3
"""What a `make test` run covered, from ctest's JUnit file (ctest --output-junit FILE): how many
tests passed and failed, every test that was skipped with the reason it gave, and — within the
tests that passed — the gtest cases that skipped (a test binary can pass with some cases
skipped, e.g. without CMA or AVX2), so that a reader sees what a green run did not check.

    test_summary.py JUNIT_XML
"""
import re
import sys
import xml.etree.ElementTree as ET


def reason(out):
    """The line that says why: gtest's line after "Skipped", or a line that says "skipped"."""
    lines = [l.strip() for l in (out or "").splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") and i + 1 < len(lines):
            return lines[i + 1]
    said = [l for l in lines if re.search(r"\bskip", l, re.I) and "gtest_skip_as_skip" not in l]
    return said[-1] if said else (lines[-1] if lines else "(no output)")


def main(path):
    cases = ET.parse(path).getroot().iter("testcase")
    passed, failed, skipped, partial = [], [], [], []
    for case in cases:
        name, status = case.get("name"), case.get("status")
        out = case.findtext("system-out") or ""
        if case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped.append((name, reason(out)))
        elif case.find("failure") is not None or status == "fail":
            failed.append(name)
        else:
            passed.append(name)
            m = re.search(r"\[  SKIPPED \] (\d+) tests?", out)
            if m:
                partial.append((name, int(m.group(1)), reason(out)))
    print(f"test summary: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    for name in failed:
        print(f"  FAILED  {name}")
    for name, why in skipped:
        print(f"  SKIPPED {name}: {why}")
    for name, n, why in partial:
        print(f"  passed with {n} case(s) skipped: {name}: {why}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
