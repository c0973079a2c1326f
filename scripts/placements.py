#!/usr/bin/env python3
"""The single-value decoders at each placement of their loop (benches/placements.rs).

Builds the placements benchmark with functions aligned to 64 bytes (in its
own target directory, target/placements, so the usual builds are left
alone), finds in the disassembly where each copy's loop sits in its 64-byte
line, runs the benchmark pinned to one core and prints, per distribution
and decoder, the median time a value at each of the four placements, their
mean, and the mean's ratio to bijoux's.

  python3 scripts/placements.py                  # all distributions
  python3 scripts/placements.py --rounds 9 tiny mixed
  python3 scripts/placements.py --per-copy       # every copy's median too
  python3 scripts/placements.py --no-build       # reuse the last build
  python3 scripts/placements.py --rounds 9 --align 6,7,8,9   # four builds, then across them

`--align` builds once per function alignment (2^K bytes, each in its own target
directory, target/placements-a<K>; 6 is target/placements): every copy still
sits at one of the four placements in its 64-byte line, but at other addresses
above that, which the branch predictor and the op cache also index by. After
each build's table comes one across the builds: each decoder's mean over every
placement of every build, its ratio to bijoux's, and each build's ratio.

Needs objdump (binutils) and taskset (util-linux); x86-64 only (the loop
is found by its one-byte test, `cmp $0xf8` or `cmp $0xf7`). The build
took 1.5 minutes here with the crates fetched (expect up to four from an
empty target directory on two cores); a run of 15 rounds about a minute.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ALIGN = 6  # functions aligned to 2^6 = 64 bytes


def target_dir(align):
    """target/placements for the default alignment (as before), target/placements-a<K> else."""
    name = "placements" if align == DEFAULT_ALIGN else f"placements-a{align}"
    return os.path.join(ROOT, "target", name)


OURS = ["bijou64-decode", "bijou64-reader"]
PEER = "bijoux"


def build(align):
    flags = f"-C llvm-args=-align-all-functions={align}"
    env = dict(os.environ, RUSTFLAGS=flags, CARGO_TARGET_DIR=target_dir(align))
    out = subprocess.run(
        ["cargo", "bench", "-p", "bijou-frame-benches", "--bench", "placements",
         "--no-run", "--message-format=json"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, check=True, text=True).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg["target"]["name"] == "placements":
            return msg["executable"]
    sys.exit("placements.py: cargo built no placements executable")


def last_build(align):
    deps = os.path.join(target_dir(align), "release", "deps")
    found = [os.path.join(deps, f) for f in os.listdir(deps)
             if f.startswith("placements-") and os.access(os.path.join(deps, f), os.X_OK)
             and "." not in f]
    if not found:
        sys.exit(f"placements.py: no earlier build in {target_dir(align)}; drop --no-build")
    return max(found, key=os.path.getmtime)


def loop_heads(binary):
    """Function start -> address of its first `cmp $0xf8` or `cmp $0xf7`: the loop's
    one-byte test. The loops built so far all compare with 0xf8; LLVM may also write
    `tag < 0xF8` as a compare with 0xf7 and the opposite branch."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         stdout=subprocess.PIPE, check=True, text=True).stdout
    heads, main, start = {}, None, None
    for line in dis.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:", line)
        if m:
            start = int(m.group(1), 16)
            if re.search(r"placements\d*4main", m.group(2)):
                main = start
            continue
        if start is not None and start not in heads and re.search(r"cmp[bwlq]?\s+\$0xf[78],", line):
            heads[start] = int(line.split(":")[0], 16)
    if main is None:
        sys.exit("placements.py: no main in the disassembly")
    return heads, main


def measure(binary, args):
    """Runs one build; returns the distributions in order and, per (distribution, decoder),
    the median of each of the four placements."""
    heads, main_at = loop_heads(binary)
    run = subprocess.run(["taskset", "-c", args.cpu, binary, "--bench", *args.dists],
                         env=dict(os.environ, ROUNDS=str(args.rounds)),
                         stdout=subprocess.PIPE, check=True, text=True).stdout

    placement = {}  # (decoder, copy) -> 0..3
    times = {}      # (dist, decoder) -> {placement: [ns]}
    dists = []
    for line in run.splitlines():
        f = line.split()
        if f[0] == "copy":
            start = main_at + int(f[3])
            if start not in heads:
                sys.exit(f"placements.py: no `cmp $0xf8` or `cmp $0xf7` (the loop's one-byte test) in {f[1]} "
                         f"copy {f[2]}; is the decoder inlined into the copy? The script reads x86-64 "
                         "code only, and needs the binary it built (drop --no-build)")
            placement[(f[1], int(f[2]))] = (heads[start] % 64) // 16
        elif f[0] == "time":
            dist, dec, copy, ns = f[1], f[2], int(f[3]), float(f[4])
            if dist not in dists:
                dists.append(dist)
            times.setdefault((dist, dec), {}).setdefault(placement[(dec, copy)], []).append(ns)
            if args.per_copy:
                print(f"{dist:9} {dec:15} copy {copy:2} placement {placement[(dec, copy)]} {ns:.3f} ns")

    decoders = OURS + [PEER]
    counts = {dec: [sum(1 for (d, _), p in placement.items() if d == dec and p == k) for k in range(4)]
              for dec in decoders}
    for dec, per in counts.items():
        if 0 in per:
            sys.exit(f"placements.py: {dec}'s copies miss a placement ({per} copies per placement); "
                     "try more COPIES in benches/placed_loops.rs")
    print("Copies per placement: " + "; ".join(f"{dec} {per}" for dec, per in counts.items()))
    per_placement = {key: [statistics.median(by[k]) for k in range(4)] for key, by in times.items()}
    return dists, per_placement


def print_build(dists, per_placement):
    decoders = OURS + [PEER]
    print()
    print("ns a value: the mean over the four placements [each placement's median over its copies]")
    print()
    head = "| distribution | " + " | ".join(decoders) + " | " + " | ".join(f"{o}/{PEER}" for o in OURS) + " |"
    print(head)
    print("|" + "---|" * (1 + len(decoders) + len(OURS)))
    for dist in dists:
        means, cells = {}, []
        for dec in decoders:
            per = per_placement[(dist, dec)]
            means[dec] = sum(per) / 4
            cells.append(f"{means[dec]:.2f} [{' '.join(f'{x:.2f}' for x in per)}]")
        ratios = [f"{means[o] / means[PEER]:.2f}" for o in OURS]
        print(f"| {dist} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


def print_across(aligns, builds):
    """Per distribution and decoder, the mean over every build's four placements, its ratio to
    bijoux's, and each build's own ratio."""
    dists = builds[0][0]
    print()
    print(f"Across {len(aligns)} builds (functions aligned to 2^{', 2^'.join(map(str, aligns))} bytes): "
          "ns a value, the mean over every placement of every build; ratios to bijoux's mean, "
          "then each build's ratio")
    print()
    print("| distribution | " + " | ".join(f"{d}" for d in OURS + [PEER]) + " | "
          + " | ".join(f"{o}/{PEER} [per build]" for o in OURS) + " |")
    print("|" + "---|" * (1 + len(OURS) + 1 + len(OURS)))
    for dist in dists:
        means = {dec: statistics.mean(x for _, per in builds for x in per[(dist, dec)])
                 for dec in OURS + [PEER]}
        ratios = []
        for o in OURS:
            each = [sum(per[(dist, o)]) / sum(per[(dist, PEER)]) for _, per in builds]
            ratios.append(f"{means[o] / means[PEER]:.2f} [{' '.join(f'{r:.2f}' for r in each)}]")
        print(f"| {dist} | " + " | ".join(f"{means[d]:.2f}" for d in OURS + [PEER]) + " | "
              + " | ".join(ratios) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dists", nargs="*", help="distributions to run (default: all)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--cpu", default="1", help="core to pin to (default 1)")
    ap.add_argument("--no-build", action="store_true", help="reuse the last build")
    ap.add_argument("--per-copy", action="store_true", help="print every copy's median")
    ap.add_argument("--align", default=str(DEFAULT_ALIGN),
                    help="function alignments to build with, as powers of two, comma-separated "
                         "(default 6: 64 bytes); with more than one, every build is run and a "
                         "table across them follows")
    args = ap.parse_args()
    aligns = [int(a) for a in args.align.split(",")]
    if any(a < 6 for a in aligns):
        sys.exit("placements.py: --align below 6 (64 bytes) would move the loops' placements")

    builds = []
    for align in aligns:
        binary = last_build(align) if args.no_build else build(align)
        if len(aligns) > 1:
            print(f"\n## functions aligned to 2^{align} bytes")
        dists, per_placement = measure(binary, args)
        print_build(dists, per_placement)
        builds.append((dists, per_placement))
    if len(aligns) > 1:
        print_across(aligns, builds)


if __name__ == "__main__":
    main()
