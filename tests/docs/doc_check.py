#!/usr/bin/env python3
"""Keeps README.md and docs/*.md true: their C++ compiles, README's transcripts match what the
commands print today, and their relative links lead somewhere.

    doc_check.py --source DIR --build DIR snippets --cxx CXX --library LIBSPMD
    doc_check.py --source DIR --build DIR transcripts [--python PY --pythonpath DIR]
    doc_check.py --source DIR --build DIR links

Conventions in the markdown (HTML comments: GitHub does not show them). A marker is an HTML
comment on the last non-blank line(s) before a code fence, and applies to that block only.

snippets — every ```cpp block of README.md and docs/*.md is compiled and linked against the
    built library (-std=c++20 -I include -I BUILD/include LIBSPMD -pthread), except a block
    marked `<!-- fragment -->` (code that uses names it does not declare, e.g. `model`). A
    block with `int main(` is compiled as it is; any other block is wrapped: its #include lines
    go on top, after `#include <spmd/spmd.hpp>`, the rest becomes the body of a function, and
    an empty main() is added — so a fragment that declares what it uses need not be marked.

transcripts — every ```console block of README.md is a transcript: a line `$ COMMAND` (a line
    ending in a backslash continues it) is run with bash in a scratch folder laid out like the
    source tree (include/ and build/{bin,lib,include,python} are links to the real ones), and
    the lines after it, up to the next `$ ` line, are what its stdout must be. stderr is shown
    on failure, not compared. A command that exits non-zero fails. Before the first command,
    every block marked `<!-- file: NAME -->` (in any language) is written to NAME there, so a
    transcript can compile and run a program README shows. The comparison is on shape and
    wording, not numbers: in both, every number (digits with . or , inside) becomes N and runs
    of blanks become one; lines prefixed `[r]:` (spmdrun's rank prefix) are grouped by rank,
    keeping each rank's order, since ranks print concurrently; a line `...` in the expected
    output matches any number of lines (for lines that come and go with timing — use it only
    there). `<!-- needs: torch -->` marks a transcript that needs the spmd_torch module: it
    runs with SPMD_PYTHON=PY and PYTHONPATH=DIR, and is skipped (said so) without --python.
    build/bin is first in PATH, as a venv's bin/ is after `pip install ./python`.
    ```sh blocks are not run: they show commands without output (set-up, installation), which
    `make demo`, `make test` and tests/interop/torch_pip.sh exercise.

links — every relative link of README.md and docs/*.md outside code, [text](path#anchor) and
    ![alt](path), must name an existing file, and its #anchor a heading of that file (GitHub's
    slugs: lower case, punctuation dropped, spaces to hyphens, -1/-2 for repeats).

Exit status 0 when everything holds, 1 with a report of what does not.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)[^`]*$")  # CommonMark: no ` after a ``` fence
MARKER = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")


class Block:
    def __init__(self, path, line, lang, text, markers):
        self.path, self.line, self.lang, self.text, self.markers = path, line, lang, text, markers

    def where(self):
        return f"{self.path}:{self.line}"

    def marker(self, key):
        """The value of a `key: value` marker, '' for a bare `key`, None when absent."""
        for m in self.markers:
            name, _, value = m.partition(":")
            if name.strip() == key:
                return value.strip()
        return None


def code_blocks(path, rel):
    """Fenced blocks of a markdown file, each with the HTML-comment markers just before it."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        markers, j = [], i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        while j >= 0 and MARKER.match(lines[j]):
            markers.insert(0, MARKER.match(lines[j]).group(1))
            j -= 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(fence[0] * len(fence)):
            body.append(lines[i])
            i += 1
        # Blocks indented under a list item: drop the indentation of the opening fence.
        indent = len(lines[start]) - len(lines[start].lstrip())
        body = [b[indent:] if b[:indent].strip() == "" else b for b in body]
        blocks.append(Block(rel, start + 1, lang, "\n".join(body) + "\n", markers))
        i += 1
    return blocks


def markdown_files(source):
    files = [source / "README.md"] + sorted((source / "docs").glob("*.md"))
    return [(f, str(f.relative_to(source))) for f in files if f.exists()]


# --- snippets -------------------------------------------------------------------------------

def wrap_fragment(code):
    includes = [l for l in code.split("\n") if l.strip().startswith("#include")]
    body = [l for l in code.split("\n") if not l.strip().startswith("#include")]
    return ("#include <spmd/spmd.hpp>\n" + "\n".join(includes) +
            "\n\nvoid spmd_doc_snippet() {\n" + "\n".join(body) + "\n}\n\nint main() { return 0; }\n")


def check_snippets(args):
    source, build = Path(args.source), Path(args.build)
    failures, compiled, skipped = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="spmd-doc-snippets-") as tmp:
        for path, rel in markdown_files(source):
            for n, block in enumerate(b for b in code_blocks(path, rel) if b.lang in ("cpp", "c++")):
                if block.marker("fragment") is not None:
                    skipped += 1
                    continue
                program = re.search(r"\bint\s+main\s*\(", block.text) is not None
                text = block.text if program else wrap_fragment(block.text)
                name = re.sub(r"\W", "_", rel) + f"_{n}"
                cpp = Path(tmp) / (name + ".cpp")
                cpp.write_text(text)
                cmd = [args.cxx, "-std=c++20", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                       "-I", str(source / "include"), "-I", str(build / "include"), str(cpp),
                       args.library, "-pthread", "-o", str(Path(tmp) / name)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                compiled += 1
                kind = "program" if program else "fragment, wrapped in a function"
                if r.returncode != 0:
                    failures.append(f"{block.where()}: the ```cpp block ({kind}) does not compile:\n"
                                    f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}")
                else:
                    print(f"ok   {block.where()} ({kind})" + (f"\n{r.stderr}" if r.stderr else ""))
    print(f"{compiled} C++ block(s) compiled, {skipped} marked <!-- fragment --> skipped")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures or compiled == 0 else 0


# --- transcripts ------------------------------------------------------------------------------

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
RANK_PREFIX = re.compile(r"^\[(\d+)\]:")


def normalise(lines):
    """Numbers to N, blanks collapsed, lines grouped by spmdrun's [r]: prefix (stable)."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    keyed = []
    for i, line in enumerate(lines):
        m = RANK_PREFIX.match(line)
        keyed.append((int(m.group(1)) if m else -1, i, " ".join(NUMBER.sub("N", line).split())))
    keyed.sort(key=lambda k: (k[0], k[1]))  # lines without a prefix (-1) first, in their order
    return [k[2] for k in keyed]


def matches(expected, actual):
    """Line-by-line equality, where an expected line `...` stands for any number of lines."""
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            r = j == len(actual)
        elif expected[i] == "...":
            r = go(i + 1, j) or (j < len(actual) and go(i, j + 1))
        else:
            r = j < len(actual) and expected[i] == actual[j] and go(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return go(0, 0)


def parse_transcript(text):
    """[(command, [expected lines])] from a console block."""
    steps, lines, i = [], text.rstrip("\n").split("\n"), 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            if lines[i].strip():
                raise ValueError(f"output line before any `$ ` command: {lines[i]!r}")
            i += 1
            continue
        cmd = lines[i][2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + "\n" + lines[i]
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        steps.append((cmd, out))
    return steps


def make_sandbox(tmp, source, build):
    (tmp / "include").symlink_to(source / "include")
    (tmp / "build").mkdir()
    for sub in ("bin", "lib", "include", "python"):
        if (build / sub).exists():
            (tmp / "build" / sub).symlink_to(build / sub)


def check_transcripts(args):
    source, build = Path(args.source).resolve(), Path(args.build).resolve()
    readme = source / "README.md"
    blocks = code_blocks(readme, "README.md")
    transcripts = [b for b in blocks if b.lang == "console"]
    if not transcripts:
        print("FAIL README.md has no ```console transcript")
        return 1
    failures, ran, skipped = [], 0, []
    with tempfile.TemporaryDirectory(prefix="spmd-readme-") as tmpname:
        tmp = Path(tmpname)
        make_sandbox(tmp, source, build)
        for b in blocks:
            name = b.marker("file")
            if name:
                (tmp / name).write_text(b.text)
                print(f"wrote {name} from {b.where()}")
        env = dict(os.environ)
        env["PATH"] = f"{tmp / 'build' / 'bin'}:{env.get('PATH', '')}"
        for b in transcripts:
            needs = b.marker("needs")
            if needs == "torch":
                if not args.python:
                    skipped.append(f"{b.where()} (needs torch: spmd_torch is not built)")
                    continue
                env_b = dict(env, SPMD_PYTHON=args.python,
                             PYTHONPATH=os.pathsep.join(filter(None, [args.pythonpath, env.get("PYTHONPATH")])))
            elif needs:
                failures.append(f"{b.where()}: unknown marker <!-- needs: {needs} -->")
                continue
            else:
                env_b = env
            try:
                steps = parse_transcript(b.text)
            except ValueError as e:
                failures.append(f"{b.where()}: {e}")
                continue
            for cmd, expected in steps:
                ran += 1
                print(f"$ {cmd}    ({b.where()})", flush=True)
                try:
                    r = subprocess.run(["bash", "-c", cmd], cwd=tmp, env=env_b, capture_output=True,
                                       text=True, timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    failures.append(f"{b.where()}: `{cmd}` ran past {args.timeout} s")
                    continue
                actual = r.stdout.split("\n")
                want, got = normalise(expected), normalise(actual)
                if r.returncode != 0:
                    failures.append(f"{b.where()}: `{cmd}` exited with {r.returncode}\n"
                                    f"--- stdout\n{r.stdout}--- stderr\n{r.stderr}")
                elif not matches(want, got):
                    diff = "\n".join(difflib.unified_diff(want, got, "README (normalised)",
                                                          "output (normalised)", lineterm=""))
                    failures.append(f"{b.where()}: `{cmd}` printed something else than README shows\n"
                                    f"{diff}\n--- stdout as printed\n{r.stdout}--- stderr\n{r.stderr}")
                else:
                    print(r.stdout, end="")
    print(f"{ran} command(s) run from {len(transcripts)} transcript(s)")
    for s in skipped:
        print(f"SKIPPED {s}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


# --- links ------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_lines(path):
    """(line number, text) of a markdown file outside fenced code."""
    fence = None
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        yield n, line


def prose_lines(path):
    """markdown_lines with inline code removed (a link inside `code` is no link)."""
    for n, line in markdown_lines(path):
        yield n, re.sub(r"(`+).*?\1", "", line)


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in markdown_lines(path):  # a heading's `code` counts in its slug
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(2))
            k = seen.get(base, 0)
            out.add(base if k == 0 else f"{base}-{k}")
            seen[base] = k + 1
        for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
            out.add(a)
    return out


def check_links(args):
    source = Path(args.source).resolve()
    failures, checked = [], 0
    cache = {}
    for path, rel in markdown_files(source):
        for n, line in prose_lines(path):
            targets = [m.group(1) for m in LINK.finditer(line)]
            m = REF_DEF.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if SCHEME.match(target):
                    continue
                checked += 1
                file_part, _, anchor = target.partition("#")
                dest = (path.parent / file_part).resolve() if file_part else path
                if not dest.exists():
                    failures.append(f"{rel}:{n}: link to {target}: {file_part} does not exist")
                    continue
                if anchor:
                    if dest.suffix != ".md":
                        failures.append(f"{rel}:{n}: link to {target}: an anchor into a file that is not markdown")
                        continue
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        close = difflib.get_close_matches(anchor, sorted(cache[dest]), 1)
                        failures.append(f"{rel}:{n}: link to {target}: no heading #{anchor} in "
                                        f"{dest.relative_to(source)}" + (f" (did you mean #{close[0]}?)" if close else ""))
    print(f"{checked} relative link(s) checked in README.md and docs/*.md")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("snippets")
    s.add_argument("--cxx", default="c++")
    s.add_argument("--library", required=True)
    t = sub.add_parser("transcripts")
    t.add_argument("--python", default="")
    t.add_argument("--pythonpath", default="")
    t.add_argument("--timeout", type=int, default=300)
    sub.add_parser("links")
    args = p.parse_args()
    return {"snippets": check_snippets, "transcripts": check_transcripts, "links": check_links}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
