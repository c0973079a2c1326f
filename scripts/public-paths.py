#!/usr/bin/env python3
"""Counts the paths by which a user of the facade can name an item.

    python3 scripts/public-paths.py [ITEM ...]
    python3 scripts/public-paths.py --all

`--all` takes every public item declared in the crates' sources (struct,
enum, trait, fn, const, type, static) and prints the names with more paths
than declarations (a name two modules each declare, such as
`bijou64::encode` and `leb128::encode`, is two items with a path each),
then the totals.

For each item (default: Received Clock Wire NonceCache Message FrameCodec
SendError ConnectError), every candidate path `bijou_frame::<root>::<module
path>::<item>` is tried, where the roots are the facade's modules and the
module paths are every module file of every crate (a superset of the real
paths). One throwaway crate under `target/public-paths` imports each
candidate in its own module; `cargo check` reports each one that does not
resolve, and the rest are the item's paths. Prints one line per item: the
count, then the paths.
"""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRATES = ["codec", "signing", "framing", "proto", "net"]
FACADE_ROOTS = ["", "inspect"] + CRATES
ALL = sys.argv[1:] == ["--all"]
ITEMS = ([] if ALL else sys.argv[1:]) or [
    "Received", "Clock", "Wire", "NonceCache", "Message", "FrameCodec", "SendError",
    "ConnectError",
]


def module_paths():
    """Every module path a crate's files could give, e.g. `session`,
    `keyhive::cbor`, `transport::websocket`."""
    paths = {""}
    for crate in CRATES:
        src = ROOT / crate / "src"
        for file in src.rglob("*.rs"):
            rel = file.relative_to(src).with_suffix("")
            parts = [p for p in rel.parts if p not in ("lib", "mod")]
            for i in range(1, len(parts) + 1):
                paths.add("::".join(parts[:i]))
    return sorted(paths)


DECL = re.compile(
    r"^\s*pub (?:const fn|async fn|unsafe fn|fn|struct|enum|trait|const|type|static) (\w+)", re.M
)


def declared_items():
    """Every `pub` item name declared in the crates' sources, with how many
    times it is declared."""
    names = {}
    for crate in CRATES:
        for file in (ROOT / crate / "src").rglob("*.rs"):
            text = file.read_text()
            # Items of `impl` blocks are indented; top-level ones are not.
            for m in DECL.finditer(text):
                if not m.group(0).startswith(" "):
                    names[m.group(1)] = names.get(m.group(1), 0) + 1
    return names


MODULES = None


def candidates(item):
    for module in MODULES:
        yield f"{module}::{item}"


def check(work, paths):
    """The indexes of `paths` that do not resolve as imports."""
    lines = ["#![allow(unused_imports)]"]
    lines += [f"mod m{i} {{ use {path}; }}" for i, path in enumerate(paths)]
    (work / "src" / "lib.rs").write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        ["cargo", "check", "--quiet", "--message-format=short", "--offline",
         "--target-dir", os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))],
        cwd=work, capture_output=True, text=True,
    )
    failed = set()
    for line in out.stderr.splitlines():
        m = re.match(r"src/lib\.rs:(\d+):", line)
        if m:
            failed.add(int(m.group(1)) - 2)  # line 1 is the allow
    return failed


def main():
    global MODULES
    work = ROOT / "target" / "public-paths"
    (work / "src").mkdir(parents=True, exist_ok=True)
    (work / "Cargo.toml").write_text(
        '[package]\nname = "public-paths"\nversion = "0.0.0"\nedition = "2021"\n'
        "[workspace]\n"
        f'[dependencies]\nbijou-frame = {{ path = "{ROOT}", features = ["iroh", "longpoll", "websocket"] }}\n'
    )
    # First the modules a user can reach (a module of one crate can be
    # re-exported by another), then each item under each of them.
    modules = ["bijou_frame"] + [
        "::".join(p for p in ["bijou_frame", root, module] if p)
        for root in FACADE_ROOTS
        for module in (module_paths() if root in CRATES else [""])
    ]
    modules = sorted(set(modules))
    unreachable = check(work, modules)
    MODULES = [m for i, m in enumerate(modules) if i not in unreachable]
    declared = declared_items()
    items = sorted(declared) if ALL else ITEMS
    index = [(item, path) for item in items for path in candidates(item)]
    failed = check(work, [path for _, path in index])
    counts = {}
    for item in items:
        found = [p for i, (it, p) in enumerate(index) if it == item and i not in failed]
        counts[item] = len(found)
        if not ALL or len(found) > declared.get(item, 1):
            print(f"{item}: {len(found)} path(s): {', '.join(found)}")
    if ALL:
        named = {item: c for item, c in counts.items() if c > 0}
        for item in sorted(set(declared) - set(named)):
            print(f"{item}: no path (behind a feature the facade lacks, or unreachable)")
        extra = {item: c - declared[item] for item, c in named.items() if c > declared[item]}
        print(
            f"{sum(declared[i] for i in named)} public items under {len(named)} names;"
            f" {len(extra)} names with more paths than items; {sum(named.values())} paths"
            f" in all, {sum(extra.values())} of them extra"
        )


if __name__ == "__main__":
    main()
