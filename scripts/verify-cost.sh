#!/usr/bin/env bash
# What a peer's forged signatures make a session pay, in `verify_strict`s
# per item, counted in instructions (callgrind), so the figures are the
# same on every run: for each pattern of forgeries and step size, a
# session receiving one BatchSyncResponse (benches/verify_cost.rs,
# `session`), divided by sequential `verify_strict` of the same items with
# the same scope and blob checks (`sequential`). Only the measured
# function is counted (--toggle-collect), not making the keys and
# signatures. Each row also checks that the session and the sequential
# baseline accept and refuse exactly the same items.
#
#   bash scripts/verify-cost.sh                  # this tree
#   BEFORE=bbbeff3 bash scripts/verify-cost.sh   # and that commit's session, side by side
#   ITEMS=4096 STEPS="32 4096" PATTERNS="1in7 all" bash scripts/verify-cost.sh
#
# BEFORE: any commit; its tree is extracted under target/verify-cost/
# (git archive, nothing in the repository changes), given this tree's
# benches/verify_cost.rs, and built in target/verify-cost/target (kept;
# the first build compiles the bench crate's dependencies again, about
# ten minutes on two busy cores). Patterns: honest, 1in7 and 1in32 (every
# 7th / 32nd item forged, from the first), all, first, last. STEPS: the
# session's verify_step; ITEMS is the whole message in a single step.
# Needs valgrind. About a minute per tree once built.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
items=${ITEMS:-1024}
steps=${STEPS:-"32 $items"}
patterns=${PATTERNS:-"honest 1in7 1in32 all first last"}
before=${BEFORE:-}
command -v valgrind >/dev/null || {
    echo "valgrind is missing: install it (apt-get install valgrind)" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The verify_cost executable of the workspace at $1 (a Cargo.toml), built
# in target directory $2.
build() {
    cargo bench --locked --manifest-path "$1" -p bijou-frame-benches --bench verify_cost \
        --no-run --message-format=json --target-dir "$2" 2>"$tmp/build.err" |
        python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "verify_cost" and msg.get("executable"):
        print(msg["executable"])
' || { cat "$tmp/build.err" >&2; exit 1; }
}

# The tree of commit $1 under target/verify-cost/, with this tree's bench.
extract() {
    local dir=$root/target/verify-cost/$1
    rm -rf "$dir"
    mkdir -p "$dir"
    git archive "$1" | tar -x -C "$dir"
    cp benches/verify_cost.rs "$dir/benches/"
    if ! grep -q '^name = "verify_cost"' "$dir/benches/Cargo.toml"; then
        printf '\n[[bench]]\nname = "verify_cost"\npath = "verify_cost.rs"\nharness = false\n' \
            >>"$dir/benches/Cargo.toml"
    fi
    echo "$dir"
}

# Instructions in the function matching $1 of one run of the rest; the
# run's verdict line goes to $tmp/verdict.
count() {
    local function=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
        --toggle-collect="*$function*" "$@" >"$tmp/verdict" 2>"$tmp/valgrind.err" ||
        { cat "$tmp/valgrind.err" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$tmp/cg"
}

# The accepted/refused part of the last verdict line.
verdict() { grep -o 'accepted=[0-9]* refused=[0-9]*' "$tmp/verdict"; }

echo "building this tree's bench..." >&2
after_bin=$(build Cargo.toml "$root/target")
before_bin=
if [ -n "$before" ]; then
    echo "building $before's session with the same bench..." >&2
    # A target directory of its own: the workspace's crates there have the
    # same names and hashes as here, so sharing one would take this
    # tree's build for that one.
    before_bin=$(build "$(extract "$before")/Cargo.toml" "$root/target/verify-cost/target")
fi

printf '%s items; verify_strict per item = session instructions / sequential verify_strict instructions\n' "$items"
if [ -n "$before" ]; then
    printf '%-7s %-6s %12s %9s %9s   %s\n' pattern step sequential "$before" after verdict
else
    printf '%-7s %-6s %12s %9s   %s\n' pattern step sequential after verdict
fi
for pattern in $patterns; do
    sequential=$(count measure_sequential "$after_bin" sequential "$pattern" "$items")
    want=$(verdict)
    for step in $steps; do
        after=$(count measure_session "$after_bin" session "$pattern" "$items" "$step")
        [ "$(verdict)" = "$want" ] || { echo "the session disagrees with verify_strict: $(verdict), not $want" >&2; exit 1; }
        ratio_after=$(echo "scale=3; $after / $sequential" | bc -l)
        if [ -n "$before" ]; then
            old=$(count measure_session "$before_bin" session "$pattern" "$items" "$step")
            [ "$(verdict)" = "$want" ] || { echo "$before's session disagrees with verify_strict: $(verdict), not $want" >&2; exit 1; }
            ratio_before=$(echo "scale=3; $old / $sequential" | bc -l)
            printf '%-7s %-6s %12s %9.3f %9.3f   %s\n' "$pattern" "$step" "$sequential" "$ratio_before" "$ratio_after" "$want"
        else
            printf '%-7s %-6s %12s %9.3f   %s\n' "$pattern" "$step" "$sequential" "$ratio_after" "$want"
        fi
    done
done
echo "(instructions counted by callgrind in the measured function only; sequential = instructions of the baseline)"
