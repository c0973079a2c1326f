#!/usr/bin/env python3
"""Print criterion medians as a Markdown table with ratio columns.

Reads target/criterion/**/new/{benchmark,estimates}.json as left by the
last `cargo bench -p bijou-frame-benches` run (criterion writes to the
workspace's target directory; run this from the repository root or pass
--criterion). Rows are benchmark groups, columns are functions,
cells are the median time per iteration; ratio columns divide our median
by a peer's (below 1.0 means we are faster).

  cargo bench -p bijou-frame-benches --bench varint
  python3 scripts/bench-table.py varint        # the varint shootout preset
  # or a run saved with `-- --save-baseline run1`:
  python3 scripts/bench-table.py varint --baseline run1
  python3 scripts/bench-table.py --groups '^decode/' --ours bijou64 \
      --vs bijoux --vs-best prost,unsigned-varint,gimli-leb128
  # the same ratios from several builds (scripts/bench-layouts.sh), one
  # column per build (and per baseline, for a comma-separated list), with
  # their median, minimum and maximum:
  python3 scripts/bench-table.py --groups '^decode/' --baseline run1,run2 \
      --ratio bijou64-decode/bijoux --across target/layouts/*/criterion
"""
import argparse
import json
import os
import re
import statistics
import sys

PRESETS = {
    "varint": dict(
        groups=r"^(encode|decode|canonical)/",
        ours="bijou64",
        vs="bijoux",
        vs_best="prost,unsigned-varint,gimli-leb128",
        per="value",
        # The single-value decoder (what Reader::bijou64 runs) has its own
        # ratio to bijoux beside the bulk decoder's.
        # `Reader::bijou64` is the same decoder behind the message cursor.
        # `bijoux-again` is bijoux's loop a second time (a control: what
        # placement alone does to a one-loop ratio in this build).
        # The `-placed` columns time each of those loops spread over sixteen
        # copies at different places in the binary (benches/placed_loops.rs).
        ratio=["bijou64-decode/bijoux", "bijou64-reader/bijoux", "bijoux-again/bijoux",
               "bijou64-decode-placed/bijoux-placed", "bijou64-reader-placed/bijoux-placed"],
    ),
}


def load(criterion_dir, baseline="new"):
    results = {}
    for root, _dirs, files in os.walk(criterion_dir):
        if os.path.basename(root) != baseline or "estimates.json" not in files:
            continue
        with open(os.path.join(root, "benchmark.json")) as f:
            meta = json.load(f)
        with open(os.path.join(root, "estimates.json")) as f:
            est = json.load(f)
        group = meta["group_id"]
        func = meta.get("function_id") or meta.get("value_str") or "?"
        elements = (meta.get("throughput") or {}).get("Elements")
        nbytes = (meta.get("throughput") or {}).get("Bytes")
        results.setdefault(group, {})[func] = (
            est["median"]["point_estimate"],
            elements,
            nbytes,
        )
    return results


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset", nargs="?", choices=sorted(PRESETS))
    ap.add_argument("--criterion", default=os.path.join("target", "criterion"))
    ap.add_argument("--baseline", default="new",
                    help="a run saved with criterion's --save-baseline NAME "
                         "(with --across, a comma-separated list)")
    ap.add_argument("--groups", help="regex on group ids")
    ap.add_argument("--ours")
    ap.add_argument("--vs", help="peer for a ratio column")
    ap.add_argument("--vs-best", help="comma list; ratio against the fastest")
    ap.add_argument("--per", choices=["iter", "value"], default="iter",
                    help="report time per iteration or per element")
    ap.add_argument("--ratio", action="append", default=[],
                    help="an extra ratio column A/B of two functions (repeatable)")
    ap.add_argument("--across", nargs="+", metavar="CRITERION_DIR",
                    help="print each --ratio per directory (one build each), "
                         "with the median, minimum and maximum across them")
    args = ap.parse_args()
    if args.preset:
        for key, value in PRESETS[args.preset].items():
            if key == "ratio":
                args.ratio = value + [r for r in args.ratio if r not in value]
            elif getattr(args, key) in (None, "iter"):
                setattr(args, key, value)
    if args.across:
        if not args.groups or not args.ratio:
            ap.error("--across needs --groups and at least one --ratio")
        across(args)
        return
    if not args.groups or not args.ours:
        ap.error("give a preset or --groups and --ours")

    results = load(args.criterion, args.baseline)
    pattern = re.compile(args.groups)
    groups = sorted(g for g in results if pattern.search(g))
    if not groups:
        sys.exit(f"no criterion results match {args.groups!r} in {args.criterion}")
    # Ours first, then our other functions, the named peer, and the rest
    # by name, so that every run prints the same columns in the same order.
    funcs = sorted(
        {f for g in groups for f in results[g]},
        key=lambda f: (
            f != args.ours,
            not f.startswith(args.ours),
            f != args.vs,
            f,
        ),
    )
    best = [b for b in (args.vs_best or "").split(",") if b]

    header = ["group"] + funcs
    if args.vs:
        header.append(f"{args.ours}/{args.vs}")
    if best:
        header.append(f"{args.ours}/best-of({','.join(best)})")
    ratios = [r.split("/", 1) for r in args.ratio]
    header.extend(f"{a}/{b}" for a, b in ratios)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for g in groups:
        row = [g]
        for f in funcs:
            cell = results[g].get(f)
            if cell is None:
                row.append("")
                continue
            ns, elements, _ = cell
            if args.per == "value" and elements:
                row.append(f"{ns / elements:.2f} ns")
            else:
                row.append(fmt_time(ns))
        ours = results[g].get(args.ours)
        if args.vs:
            peer = results[g].get(args.vs)
            row.append(f"{ours[0] / peer[0]:.2f}" if ours and peer else "")
        if best:
            peers = [(results[g][b][0], b) for b in best if b in results[g]]
            if ours and peers:
                t, name = min(peers)
                row.append(f"{ours[0] / t:.2f} ({name})")
            else:
                row.append("")
        for a, b in ratios:
            top, bottom = results[g].get(a), results[g].get(b)
            row.append(f"{top[0] / bottom[0]:.2f}" if top and bottom else "")
        print("| " + " | ".join(row) + " |")


def across(args):
    """One table per ratio: a row per group, a column per build (and per
    baseline, when --baseline names several, comma-separated)."""
    pattern = re.compile(args.groups)
    baselines = [b for b in args.baseline.split(",") if b]
    runs = []
    for d in args.across:
        # target/layouts/NAME/criterion -> NAME; any other DIR -> its name
        path = os.path.normpath(d)
        name = os.path.basename(path)
        if name == "criterion":
            name = os.path.basename(os.path.dirname(path)) or d
        for baseline in baselines:
            results = load(d, baseline)
            if not results:
                sys.exit(f"no criterion results for baseline {baseline!r} in {d}")
            label = name if len(baselines) == 1 else f"{name} {baseline}"
            runs.append((label, results))
    groups = sorted({g for _, r in runs for g in r if pattern.search(g)})
    if not groups:
        sys.exit(f"no criterion results match {args.groups!r}")
    for spec in args.ratio:
        a, b = spec.split("/", 1)
        print(f"\n{a} / {b}\n")
        header = ["group"] + [label for label, _ in runs] + ["median", "min", "max"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for g in groups:
            cells, values = [g], []
            for _, results in runs:
                top, bottom = results.get(g, {}).get(a), results.get(g, {}).get(b)
                if top and bottom:
                    values.append(top[0] / bottom[0])
                    cells.append(f"{values[-1]:.2f}")
                else:
                    cells.append("")
            if values:
                cells += [f"{statistics.median(values):.2f}",
                          f"{min(values):.2f}", f"{max(values):.2f}"]
            else:
                cells += ["", "", ""]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
