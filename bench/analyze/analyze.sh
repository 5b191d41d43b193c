#!/usr/bin/env bash
# Analysis speed: ltr analyze against heaptrack_print on traces of the same
# workload (bench/analyze/workload.c, N allocations). Prints events per
# second of each (best of three runs); the goal is ltr at least five times
# heaptrack_print. Then the heap model alone (model_bench.c).
# Usage: bench/analyze/analyze.sh [BUILD_DIR] [N]   (a benchmark, not a test)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}; n=${2:-2000000}
ltr=$(realpath "$build/bin/ltr"); work=$(realpath "$build/bench/analyze_workload")
tmp=$(mktemp -d /tmp/ltr-bench-analyze-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (scripts/install-deps.sh)"; exit 1; }

$ltr record -o "$tmp/w.ltr" -- "$work" "$n" >/dev/null
(cd "$tmp" && heaptrack -o "$tmp/w.heaptrack" "$work" "$n" >/dev/null 2>&1)
ht=$(ls "$tmp"/w.heaptrack*)

now() { date +%s.%N; }
# best of three runs: the machine may be busy with other work
best() {
  local b=
  for _ in 1 2 3; do
    local t0 t1; t0=$(now); "$@"; t1=$(now)
    local d; d=$(echo "$t1 - $t0" | bc)
    if [ -z "$b" ] || [ "$(echo "$d < $b" | bc)" = 1 ]; then b=$d; fi
  done
  echo "$b"
}
a=$(best sh -c '"$0" analyze "$1" --format json > "$2"' "$ltr" "$tmp/w.ltr" "$tmp/a.json")
h=$(best sh -c 'heaptrack_print "$0" > "$1"' "$ht" "$tmp/h.txt")
events=$(grep -o '"heap_events":[0-9]*' "$tmp/a.json" | cut -d: -f2)
lost=$(grep -o '"events_lost":[0-9]*' "$tmp/a.json" | cut -d: -f2)
awk -v e="$events" -v l="$lost" -v a="$a" -v h="$h" \
    -v ls="$(stat -c %s "$tmp/w.ltr")" -v hs="$(stat -c %s "$ht")" 'BEGIN {
  printf "workload: %d heap events (%d lost), trace %.1f MB, heaptrack file %.1f MB\n", e, l, ls/1e6, hs/1e6
  printf "ltr analyze:     %.3f s  %.2f M events/s\n", a, e/a/1e6
  printf "heaptrack_print: %.3f s  %.2f M events/s\n", h, e/h/1e6
  printf "ratio: ltr analyze is %.1f times as fast\n", h/a }'
# the heap model alone, without the reader, with a small and a large live set
"$build/bench/analyze_model_bench" "$n" 64
"$build/bench/analyze_model_bench" "$n" $((n / 2))
