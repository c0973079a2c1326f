#!/usr/bin/env python3
"""Lists the longest functions of the library crates and of the CLI.

    python3 scripts/longest-functions.py [--top N] [--over LINES]

A function's length is its lines from the `fn` line to its closing brace,
signature and doc-less attributes excluded. Test code is left out: files
under `tests/` and `benches/`, and everything from a file's `#[cfg(test)]`
on. Braces inside string and char literals and comments are skipped, so
the count holds for ordinary Rust; it is a measuring tape, not a parser.
"""

import argparse
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
GROUPS = {
    "library": ["codec/src", "framing/src", "proto/src", "signing/src", "net/src", "src"],
    "cli": ["cli/src"],
}
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def strip(line, state):
    """The line without comments and literals; `state` carries a block comment."""
    out = []
    i = 0
    while i < len(line):
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"] = False
            i = end + 2
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        if c == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        if c == "'" and re.match(r"'(\\.|[^\\'])'", line[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", line[i:]).group(0))
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    lines = path.read_text().split("\n")
    state = {"block": False}
    code = []
    for line in lines:
        if line.strip().startswith("#[cfg(test)]"):
            break
        code.append(strip(line, state))
    found = []
    for start, line in enumerate(code):
        m = FN.match(line)
        if not m:
            continue
        depth = 0
        opened = False
        for end in range(start, len(code)):
            if not opened and ";" in code[end] and "{" not in code[end]:
                break  # a declaration without a body
            depth += code[end].count("{") - code[end].count("}")
            opened = opened or "{" in code[end]
            if opened and depth <= 0:
                found.append((end - start + 1, f"{path.relative_to(ROOT)}:{start + 1}", m.group(6)))
                break
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--over", type=int, default=None, help="list every function longer than this")
    args = parser.parse_args()
    for group, dirs in GROUPS.items():
        found = []
        for d in dirs:
            for path in sorted((ROOT / d).rglob("*.rs")):
                found.extend(functions(path))
        found.sort(reverse=True)
        shown = [f for f in found if args.over is None or f[0] > args.over]
        if args.over is None:
            shown = shown[: args.top]
        print(f"{group}: {len(found)} functions")
        for length, at, name in shown:
            print(f"  {length:4} lines  {name}  ({at})")


if __name__ == "__main__":
    main()
