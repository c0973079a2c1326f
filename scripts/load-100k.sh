#!/usr/bin/env bash
# 100,000 authenticated idle connections on this machine, measured with
# `bijou load` against `bijou serve` (see "Load" in benches/README.md).
#
#   bash scripts/load-100k.sh [tcp|ws] [CONNECTIONS] [-- extra bijou load flags]
#
# The server runs on core 0, the load on core 1 (`taskset`), so the crypto
# limit is one core's. One process may open at most `ulimit -Hn` file
# descriptors (20,000 on the 2-core development machines, and raising it
# needs CAP_SYS_RESOURCE), so the server is as many `bijou serve
# --reuse-port` processes as that asks, sharing one port (the kernel
# spreads connections by a hash of their addresses), with one key; each
# writes its figures and `bijou load` sums them. `bijou load` itself
# starts as many worker processes as its connections need.
set -euo pipefail
cd "$(dirname "$0")/.."
transport=${1:-tcp}
connections=${2:-100000}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
port=${PORT:-7900}
cargo build --release --locked -p bijou-cli
bijou=${CARGO_TARGET_DIR:-$PWD/target}/release/bijou
dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=1048576
per=$(( hard - 100 ))
# 10% over an even share: SO_REUSEPORT's hash is not exactly even.
shards=$(( (connections * 11 / 10 + 1000 + per - 1) / per ))
"$bijou" keygen --out "$dir/server.key" >/dev/null
echo "servers: $shards bijou serve --reuse-port processes on core 0, at most $per connections each"
for i in $(seq "$shards"); do
    taskset -c 0 "$bijou" serve --listen "127.0.0.1:$port" --transport "$transport" \
        --reuse-port --max-connections "$per" --idle-timeout 900 --key "$dir/server.key" \
        --service-name load --stats "$dir/server-$i.stats" --quiet >"$dir/server-$i.log" 2>&1 &
    pids+=($!)
done
for i in $(seq "$shards"); do
    for _ in $(seq 100); do [ -s "$dir/server-$i.stats" ] && break; sleep 0.1; done
done
taskset -c 1 "$bijou" load --connect "$transport://127.0.0.1:$port" --service-name load \
    --connections "$connections" --server-stats "$dir"/server-*.stats "$@"
