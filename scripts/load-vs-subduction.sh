#!/usr/bin/env bash
# The same `bijou load` against Subduction's own WebSocket server
# (`subduction_websocket` =0.14.0, in process: the `subduction_server`
# example of the benches package) and against `bijou serve`, one after the
# other in one run, each alone on core 0 with the load on core 1: heap per
# idle connection, handshakes/s and CPU while idle, and their ratios.
#
#   bash scripts/load-vs-subduction.sh [CONNECTIONS]     # default 10,000
set -euo pipefail
cd "$(dirname "$0")/.."
connections=${1:-10000}
cargo build --release --locked -p bijou-cli
cargo build --release --locked -p bijou-frame-benches --example subduction_server
target=${CARGO_TARGET_DIR:-$PWD/target}/release
dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

# One server at a time on core 0, so that neither measures beside the
# other's connections. Subduction's server stops when its standard input
# ends: feed it a pipe that stays open until it is done.
wait_stats() { for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.1; done; }
run() { # name port
    taskset -c 1 "$target/bijou" load --connect "ws://127.0.0.1:$2" --service-name load \
        --connections "$connections" --flooders 0 --pushes 200 \
        --server-stats "$dir/$1.stats" | tee "$dir/$1.out"
}
mkfifo "$dir/hold"
sleep 100000 >"$dir/hold" &
hold=$!
pids+=($hold)
taskset -c 0 "$target/examples/subduction_server" --listen 127.0.0.1:7891 \
    --service-name load --stats "$dir/theirs.stats" <"$dir/hold" >"$dir/theirs.log" 2>&1 &
theirs=$!
pids+=($theirs)
wait_stats "$dir/theirs.stats"
echo "== Subduction's server (subduction_websocket 0.14.0, in process)"
run theirs 7891 || true
kill "$theirs" "$hold" 2>/dev/null || true
wait "$theirs" 2>/dev/null || true

taskset -c 0 "$target/bijou" serve --listen 127.0.0.1:7892 --transport ws \
    --max-connections $(( connections + 100 )) --idle-timeout 900 --service-name load \
    --stats "$dir/ours.stats" --quiet >"$dir/ours.log" 2>&1 &
pids+=($!)
wait_stats "$dir/ours.stats"
echo "== bijou serve"
run ours 7892 || true

rate() { sed -n 's/.* = \([0-9]*\)\/s;.*/\1/p' "$dir/$1.out"; }
bytes() { sed -n 's/.*(\([0-9]*\) B per connection above.*/\1/p' "$dir/$1.out"; }
tr=$(rate theirs); orr=$(rate ours); tb=$(bytes theirs); ob=$(bytes ours)
echo "== at $connections idle WebSocket connections, one run"
printf 'heap per idle connection: Subduction %s B, bijou %s B: bijou/Subduction %.3fx\n' \
    "$tb" "$ob" "$(echo "$ob / $tb" | bc -l)"
printf 'connect + handshake:      Subduction %s/s, bijou %s/s: bijou/Subduction %.2fx\n' \
    "$tr" "$orr" "$(echo "$orr / $tr" | bc -l)"
idle() { sed -n 's/.*while they idle: .*(\([0-9.]*\)% of a core).*/\1/p' "$dir/$1.out"; }
printf 'CPU while idle:           Subduction %s%%, bijou %s%% of a core\n' "$(idle theirs)" "$(idle ours)"
