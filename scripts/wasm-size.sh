#!/usr/bin/env bash
# The size of a minimal client (handshake, push, fetch; wasm-client/) on
# bijou-proto without std, built for wasm32-unknown-unknown with
# opt-level "z", LTO, one codegen unit, panic=abort, stripped: raw and
# gzipped (-9), the figure to set beside @automerge/subduction's.
#
#   bash scripts/wasm-size.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --manifest-path wasm-client/Cargo.toml --release \
    --target wasm32-unknown-unknown --locked --quiet
wasm=wasm-client/target/wasm32-unknown-unknown/release/bijou-wasm-client.wasm
raw=$(wc -c < "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
awk -v raw="$raw" -v gz="$gz" 'BEGIN {
    printf "minimal client, wasm32-unknown-unknown, opt-level z: %d B raw (%.1f KiB), %d B gzipped (%.1f KiB)\n",
        raw, raw / 1024, gz, gz / 1024
}'
