#!/usr/bin/env bash
# The varint decoders against bijoux under several code layouts.
#
# Our single-value decoder and bijoux's compile to the same shape (see
# "Single-value `decode`" in benches/DECODERS.md), so which of the two is
# ahead in one build depends on where the linker puts their loops: between
# builds that differ only in alignment, one loop ran at 1 or 2 cycles a
# value, and the ratio to bijoux moved between 0.5 and 2. Two runs of one
# binary sample the machine's noise, not that.
# This script builds the varint benchmark once per layout (each in its own
# target directory under target/layouts/, so the builds are kept), then
# runs the decode groups of each build in turn, pinned to one core, and
# prints every ratio per layout with the median across layouts
# (scripts/bench-table.py --across).
#
#   bash scripts/bench-layouts.sh            # all layouts
#   LAYOUTS="default loops64" bash scripts/bench-layouts.sh
#   BENCH_FILTER='^decode/mixed/' bash scripts/bench-layouts.sh
#   BUILD_ONLY=1 bash scripts/bench-layouts.sh   # the builds alone
#   BASELINE=after bash scripts/bench-layouts.sh # criterion's baseline name
#
# Two sweeps (BASELINE=run1, then BASELINE=run2; the second reuses the
# builds) read together, each cell a median of 12:
#   python3 scripts/bench-table.py --baseline run1,run2 --groups '^decode/' \
#       --across target/layouts/*/criterion --ratio bijou64-decode/bijoux
#
# Every layout is an ordinary build setting a user may have: the default,
# loops aligned to 32 or 64 bytes, functions to 64 bytes, branch targets
# to 16 bytes, or one codegen unit. Not run in CI: about 25 minutes on two
# cores from scratch (six builds, then six runs of 32 benchmarks), 12 when
# the builds are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

layouts=${LAYOUTS:-"default loops32 loops64 funcs64 blocks16 cgu1"}
filter=${BENCH_FILTER:-'^decode/.*/(bijou64|bijou64-decode|bijou64-reader|bijoux)$'}
cpu=${BENCH_CPU:-1}
baseline=${BASELINE:-layouts}

flags_of() {
    case $1 in
    default | cgu1) echo "" ;;
    loops32) echo "-C llvm-args=-align-loops=32" ;;
    loops64) echo "-C llvm-args=-align-loops=64" ;;
    funcs64) echo "-C llvm-args=-align-all-functions=6" ;;
    blocks16) echo "-C llvm-args=-align-all-nofallthru-blocks=4" ;;
    *)
        echo "unknown layout $1 (known: default loops32 loops64 funcs64 blocks16 cgu1)" >&2
        exit 2
        ;;
    esac
}

# build LAYOUT [PIN...] -- ARGS: cargo bench for that layout, run under
# the PIN command (empty for the builds, taskset for the runs).
build() {
    local layout=$1
    shift
    local units=16
    [ "$layout" = cgu1 ] && units=1
    local pin=()
    while [ "$1" != -- ]; do pin+=("$1"); shift; done
    shift
    RUSTFLAGS="$(flags_of "$layout")" CARGO_PROFILE_BENCH_CODEGEN_UNITS=$units \
        CARGO_TARGET_DIR="$PWD/target/layouts/$layout" \
        "${pin[@]}" cargo bench --locked -p bijou-frame-benches --bench varint "$@"
}

# All builds first, so that no compiler runs beside a measurement.
for layout in $layouts; do
    echo "==> build $layout" >&2
    build "$layout" -- --no-run
done
[ "${BUILD_ONLY:-}" = 1 ] && exit 0
for layout in $layouts; do
    echo "==> run $layout" >&2
    build "$layout" taskset -c "$cpu" -- -- "$filter" --noplot --save-baseline "$baseline" \
        >"target/layouts/$layout.log" 2>&1
done

dirs=()
for layout in $layouts; do dirs+=("target/layouts/$layout/criterion"); done
python3 scripts/bench-table.py --baseline "$baseline" --groups '^decode/' --across "${dirs[@]}" \
    --ratio bijou64-decode/bijoux --ratio bijou64-reader/bijoux --ratio bijou64/bijoux
