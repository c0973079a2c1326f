#!/usr/bin/env bash
# `bijou blob verify` and `bijou blob sign` on a 1 GiB file against b3sum
# on the same file, interleaved in one run; prints the median of each and
# the ratios. Installs b3sum with cargo if it is missing (not in CI).
#
#   bash scripts/bench-blob.sh [RUNS]      # default 11 runs each
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-11}
command -v b3sum >/dev/null || cargo install b3sum --locked
cargo build --release --locked -p bijou-cli
bijou=$PWD/target/release/bijou
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head -c $((1 << 30)) /dev/urandom >"$dir/big"
"$bijou" keygen --out "$dir/k" >/dev/null
"$bijou" blob sign "$dir/big" --key "$dir/k" >/dev/null
cat "$dir/big" >/dev/null # into the page cache, for every tool alike

now() { date +%s%N; }
declare -a b3 verify sign
for _ in $(seq "$runs"); do
    t=$(now); b3sum "$dir/big" >/dev/null; b3+=($(( $(now) - t )))
    t=$(now); "$bijou" blob verify "$dir/big" >/dev/null; verify+=($(( $(now) - t )))
    t=$(now); "$bijou" blob sign "$dir/big" --key "$dir/k" --out "$dir/s" >/dev/null; sign+=($(( $(now) - t )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(median "${b3[@]}"); mv=$(median "${verify[@]}"); ms=$(median "${sign[@]}")
printf 'b3sum              %8.1f ms\n' "$(echo "$mb / 1000000" | bc -l)"
printf 'bijou blob verify  %8.1f ms   %.2fx b3sum\n' "$(echo "$mv / 1000000" | bc -l)" "$(echo "$mv / $mb" | bc -l)"
printf 'bijou blob sign    %8.1f ms   %.2fx b3sum\n' "$(echo "$ms / 1000000" | bc -l)" "$(echo "$ms / $mb" | bc -l)"
echo "($runs runs each, interleaved; medians; 1 GiB of random bytes in the page cache; $(nproc) cores)"
